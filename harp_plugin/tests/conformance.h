// Shared pieces of the conformance harness: a plugin-loading peer and the case registry.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plugin_loader.h"
#include "test_util.h"

namespace harp_test {

extern const char* g_lib;
extern bool g_big;
extern std::string g_ns_recv, g_ns_send, g_ifname;

// One process acting as NCCL: sets its env, dlopens the plugin and binds one ABI version.
struct Peer {
  Peer(int version, const std::vector<std::string>& env);
  int init();
  void* listen(int fd_out);                       // writes the 128-byte handle to fd_out
  void* accept(void* lcomm, double timeout_s);    // fails the process on timeout
  int connect(int fd_in, void** scomm, double timeout_s);  // reads the handle from fd_in
  void* dl = nullptr;
  harp_tools::NetApi api;
};

struct NamedCase {
  std::string name;
  std::function<int()> run;
};

int abiCase();
std::vector<NamedCase> faultCases();  // conformance_faults.cc

}  // namespace harp_test
