// Params: every HARP_* setting declared once, parsed once at init into an immutable struct.
//
// Precedence: environment variable > profile file (HARP_CONFIG, written by harp-setup) > default.
// No other file calls getenv.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace harp {

// auto: io_uring SEND_ZC if the kernel has it, else MSG_ZEROCOPY; off when every device is
// virtual (no PCI device: loopback, veth), where the kernel copies anyway.
enum class ZeroCopyMode { kAuto, kUring, kMsg, kOff };

// One NIC line of the profile file: "nic <ifname> speed_mbps=<n> numa=<n>".
struct ProfileNic {
  std::string ifname;
  int speed_mbps = 0;
  int numa_node = -1;
};

// Where the instances run and how long they poll.
struct InstanceParams {
  std::vector<int> cores;  // HARP_CORES: comma list of cores to pin instances to
  bool pin = true;         // HARP_CORES=off: leave the instances unpinned
  int busy_poll_us = 20;   // HARP_BUSY_POLL_US: instance keeps polling this long after work
};

// How a message is cut into chunks and how the chunks are sent.
struct TransferParams {
  size_t chunk_bytes = 512 << 10;              // HARP_CHUNK_BYTES: unit a message is cut into (4 KiB..64 MiB)
  size_t zc_min_bytes = 64 << 10;              // HARP_ZC_MIN_BYTES: chunks at least this big go zero-copy
  ZeroCopyMode zc_mode = ZeroCopyMode::kAuto;  // HARP_ZC: auto|uring|msg|off
};

// Which interfaces carry the flows: the user's choice and harp-setup's profile.
struct InterfaceParams {
  std::string ifname;       // HARP_IFNAME: comma list of interface names or prefixes
  std::string config_path;  // HARP_CONFIG: profile file written by harp-setup
  std::vector<ProfileNic> profile_nics;
};

struct Params {
  int ninstances = 0;              // HARP_NINSTANCES: engine threads (default min(cores, 8))
  InstanceParams instances;
  int nflows = 8;                  // HARP_NFLOWS: TCP flows per comm (1..64)
  bool adapt_flows = true;         // HARP_ADAPT_FLOWS: senders use as many as the path rewards
  TransferParams transfer;
  bool hugepages = false;          // HARP_HUGEPAGES=1: back registered buffers with huge pages
  InterfaceParams interfaces;
  std::string secret;              // HARP_JOB_SECRET: per-job secret for the flow HMAC
  bool allow_no_secret = false;    // HARP_ALLOW_NO_SECRET=1: run unauthenticated
  int log_level = 2;               // HARP_LOG_LEVEL: stderr level when NCCL gives no logger
  double handshake_timeout_s = 30; // HARP_HANDSHAKE_TIMEOUT: seconds a flow may take to open
};

// Describes one declared variable for docs and `harp-setup --help`.
struct ParamDoc {
  const char* name;
  const char* type;
  const char* default_value;
  const char* doc;
};
const std::vector<ParamDoc>& harpParamDocs();

// Reads the environment (and the profile it names). Returns "" on success, else an error naming
// the variable and the bad value.
std::string harpParseParams(Params* out);

// Parses profile text (exposed for tests): fills keys not already set from the environment.
std::string harpParseProfile(const std::string& text, Params* out,
                             const std::vector<std::string>& env_set);

}  // namespace harp
