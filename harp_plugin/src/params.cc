// Params: parses HARP_* variables and the harp-setup profile file once, with named errors.
#include "params.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace harp {
namespace {

const char* envOrNull(const char* name) {
  const char* v = getenv(name);
  return (v != nullptr && v[0] != '\0') ? v : nullptr;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool parseInt(const std::string& v, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  long long x = strtoll(v.c_str(), &end, 0);
  if (v.empty() || end == nullptr || *end != '\0' || x < lo || x > hi) return false;
  *out = x;
  return true;
}

// Accepts a plain byte count or a K/M/G suffix (binary units).
bool parseBytes(const std::string& v, long long lo, long long hi, long long* out) {
  if (v.empty()) return false;
  long long mult = 1;
  std::string num = v;
  char last = static_cast<char>(toupper(v.back()));
  if (last == 'K' || last == 'M' || last == 'G') {
    mult = last == 'K' ? 1024LL : last == 'M' ? 1024LL * 1024 : 1024LL * 1024 * 1024;
    num = v.substr(0, v.size() - 1);
  }
  long long x = 0;
  if (!parseInt(num, 0, hi, &x)) return false;
  x *= mult;
  if (x < lo || x > hi) return false;
  *out = x;
  return true;
}

std::string bad(const char* name, const std::string& value, const char* expected) {
  return std::string(name) + "='" + value + "' is invalid: expected " + expected;
}

// One setting's parser: writes the value into Params, or returns why it is invalid.
using Setter = std::string (*)(const char* name, const std::string& value, Params* p);

template <int Params::*Field, long long Lo, long long Hi>
std::string setInt(const char* name, const std::string& value, Params* p) {
  long long x = 0;
  if (!parseInt(value, Lo, Hi, &x)) {
    return bad(name, value, ("an integer " + std::to_string(Lo) + ".." + std::to_string(Hi)).c_str());
  }
  p->*Field = static_cast<int>(x);
  return "";
}

template <bool Params::*Field>
std::string setFlag(const char* name, const std::string& value, Params* p) {
  if (value != "0" && value != "1") return bad(name, value, "0 or 1");
  p->*Field = value == "1";
  return "";
}

std::string setCores(const char* name, const std::string& value, Params* p) {
  p->instances.cores.clear();
  p->instances.pin = value != "off";
  if (!p->instances.pin) return "";
  std::stringstream ss(value);
  std::string item;
  long long x = 0;
  while (std::getline(ss, item, ',')) {
    if (!parseInt(trim(item), 0, 4095, &x)) return bad(name, value, "a list like 0,2, or off");
    p->instances.cores.push_back(static_cast<int>(x));
  }
  return "";
}

std::string setChunkBytes(const char* name, const std::string& value, Params* p) {
  long long x = 0;
  if (!parseBytes(value, 4096, 64LL << 20, &x)) return bad(name, value, "4096..64M bytes");
  p->transfer.chunk_bytes = static_cast<size_t>(x);
  return "";
}

std::string setZcMinBytes(const char* name, const std::string& value, Params* p) {
  long long x = 0;
  if (!parseBytes(value, 0, 1LL << 40, &x)) return bad(name, value, "bytes");
  p->transfer.zc_min_bytes = static_cast<size_t>(x);
  return "";
}

std::string setZeroCopy(const char* name, const std::string& value, Params* p) {
  if (value == "auto") p->transfer.zc_mode = ZeroCopyMode::kAuto;
  else if (value == "uring") p->transfer.zc_mode = ZeroCopyMode::kUring;
  else if (value == "msg") p->transfer.zc_mode = ZeroCopyMode::kMsg;
  else if (value == "off" || value == "0") p->transfer.zc_mode = ZeroCopyMode::kOff;
  else return bad(name, value, "auto, uring, msg or off");
  return "";
}

std::string setIfname(const char*, const std::string& value, Params* p) {
  p->interfaces.ifname = value;
  return "";
}

std::string setHandshakeTimeout(const char* name, const std::string& value, Params* p) {
  char* end = nullptr;
  double d = strtod(value.c_str(), &end);
  if (end == nullptr || *end != '\0' || !(d > 0 && d < 86400)) return bad(name, value, "seconds in (0, 86400)");
  p->handshake_timeout_s = d;
  return "";
}

std::string setBusyPoll(const char* name, const std::string& value, Params* p) {
  long long x = 0;
  if (!parseInt(value, 0, 1000000, &x)) return bad(name, value, "microseconds 0..1000000");
  p->instances.busy_poll_us = static_cast<int>(x);
  return "";
}

std::string setLogLevel(const char* name, const std::string& value, Params* p) {
  long long x = 0;
  if (!parseInt(value, 0, 5, &x)) return bad(name, value, "0..5");
  p->log_level = static_cast<int>(x);
  return "";
}

// Variables settable from both the environment and the profile (secrets are env-only).
struct Setting {
  const char* name;
  Setter apply;
};
const Setting kSettings[] = {
    {"HARP_NINSTANCES", &setInt<&Params::ninstances, 1, 64>},
    {"HARP_CORES", &setCores},
    {"HARP_NFLOWS", &setInt<&Params::nflows, 1, 64>},
    {"HARP_ADAPT_FLOWS", &setFlag<&Params::adapt_flows>},
    {"HARP_CHUNK_BYTES", &setChunkBytes},
    {"HARP_ZC_MIN_BYTES", &setZcMinBytes},
    {"HARP_ZC", &setZeroCopy},
    {"HARP_HUGEPAGES", &setFlag<&Params::hugepages>},
    {"HARP_IFNAME", &setIfname},
    {"HARP_ALLOW_NO_SECRET", &setFlag<&Params::allow_no_secret>},
    {"HARP_LOG_LEVEL", &setLogLevel},
    {"HARP_HANDSHAKE_TIMEOUT", &setHandshakeTimeout},
    {"HARP_BUSY_POLL_US", &setBusyPoll},
};

// Applies one setting by variable name; shared by environment and profile parsing.
std::string applySetting(const std::string& name, const std::string& value, Params* p) {
  for (const Setting& s : kSettings) {
    if (name == s.name) return s.apply(s.name, value, p);
  }
  return "unknown setting '" + name + "'";
}

}  // namespace

const std::vector<ParamDoc>& harpParamDocs() {
  static const std::vector<ParamDoc> docs = {
      {"HARP_NINSTANCES", "int", "min(cores,8)", "engine threads, each pinned to one core"},
      {"HARP_CORES", "list", "allowed, from local rank x N", "cores to pin the instances to, e.g. 2,3; off: no pinning"},
      {"HARP_NFLOWS", "int", "8", "TCP flows opened per connection, spread over instances"},
      {"HARP_ADAPT_FLOWS", "bool", "1", "1: a sender uses 1..HARP_NFLOWS flows, starting at 4, as the path rewards "
                                        "(flow_governor.h); 0: all of them"},
      {"HARP_CHUNK_BYTES", "bytes", "512K", "a message is cut into chunks of this size"},
      {"HARP_ZC_MIN_BYTES", "bytes", "64K", "chunks at least this big are sent zero-copy"},
      {"HARP_ZC", "enum", "auto", "zero-copy: auto (io_uring, else MSG_ZEROCOPY), uring, msg, off"},
      {"HARP_HUGEPAGES", "bool", "0", "1: advise huge pages for registered host buffers"},
      {"HARP_IFNAME", "list", "all up, non-loopback", "interfaces (names or prefixes) to use"},
      {"HARP_CONFIG", "path", "", "profile file written by harp-setup"},
      {"HARP_JOB_SECRET", "string", "", "per-job secret; flows prove it with HMAC-SHA256"},
      {"HARP_ALLOW_NO_SECRET", "bool", "0", "1: allow running without a secret (no HMAC)"},
      {"HARP_LOG_LEVEL", "int", "2", "stderr log level when NCCL passes no logger"},
      {"HARP_HANDSHAKE_TIMEOUT", "seconds", "30", "time a flow may take to complete its handshake"},
      {"HARP_BUSY_POLL_US", "usec", "20", "instances keep polling (yielding) this long after work"},
  };
  return docs;
}

std::string harpParseProfile(const std::string& text, Params* out,
                             const std::vector<std::string>& env_set) {
  std::stringstream ss(text);
  std::string line;
  int lineno = 0;
  while (std::getline(ss, line)) {
    ++lineno;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::string where = "profile line " + std::to_string(lineno) + ": ";
    if (line.rfind("nic ", 0) == 0) {
      std::stringstream ls(line.substr(4));
      ProfileNic nic;
      ls >> nic.ifname;
      std::string kv;
      while (ls >> kv) {
        long long x = 0;
        if (kv.rfind("speed_mbps=", 0) == 0 && parseInt(kv.substr(11), 0, 1 << 30, &x)) {
          nic.speed_mbps = static_cast<int>(x);
        } else if (kv.rfind("numa=", 0) == 0 && parseInt(kv.substr(5), -1, 1024, &x)) {
          nic.numa_node = static_cast<int>(x);
        } else if (kv.rfind("pci=", 0) != 0) {
          return where + "bad nic attribute '" + kv + "'";
        }
      }
      if (nic.ifname.empty()) return where + "nic line without an interface name";
      out->interfaces.profile_nics.push_back(nic);
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) return where + "expected 'HARP_X = value' or 'nic ...'";
    std::string name = trim(line.substr(0, eq));
    std::string value = trim(line.substr(eq + 1));
    if (name == "HARP_JOB_SECRET") return where + "secrets do not belong in the profile";
    if (std::find(env_set.begin(), env_set.end(), name) != env_set.end()) continue;
    std::string err = applySetting(name, value, out);
    if (!err.empty()) return where + err;
  }
  return "";
}

std::string harpParseParams(Params* out) {
  Params p;
  std::vector<std::string> env_set;
  for (const Setting& s : kSettings) {
    const char* v = envOrNull(s.name);
    if (v == nullptr) continue;
    std::string err = s.apply(s.name, v, &p);
    if (!err.empty()) return err;
    env_set.push_back(s.name);
  }
  if (const char* path = envOrNull("HARP_CONFIG")) {
    p.interfaces.config_path = path;
    std::ifstream f(path);
    if (!f) return std::string("HARP_CONFIG='") + path + "': cannot open the profile file";
    std::stringstream buf;
    buf << f.rdbuf();
    std::string err = harpParseProfile(buf.str(), &p, env_set);
    if (!err.empty()) return std::string("HARP_CONFIG='") + path + "' " + err;
  }
  if (const char* s = envOrNull("HARP_JOB_SECRET")) p.secret = s;
  if (p.ninstances == 0) {
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    p.ninstances = std::max(1, std::min(cores, 8));
  }
  *out = p;
  return "";
}

}  // namespace harp
