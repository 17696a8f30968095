// NetApi: loads a NCCL net plugin .so and exposes one exported version in version-neutral form.
//
// Used by the conformance harness and harp-bench, which act as NCCL: they dlopen the library,
// dlsym ncclNetPlugin_vN and call through that exact struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harp/abi_common.h"

namespace harp_tools {

using Res = int;  // ncclResult_t value

struct NetProps {
  std::string name;
  bool has_pci = false;
  int ptr_support = 0;
  int speed = 0;
  int max_recvs = 0;
  int max_comms = 0;
  size_t max_p2p_bytes = 0;  // 0 for v8
};

struct NetApi {
  int version = 0;
  std::string name;
  std::function<Res(harp_abi::ncclDebugLogger_t)> init;
  std::function<Res(int*)> devices;
  std::function<Res(int, NetProps*)> getProperties;
  std::function<Res(int, void*, void**)> listen;
  std::function<Res(int, void*, void**)> connect;
  std::function<Res(void*, void**)> accept;
  std::function<Res(void*, void*, size_t, int, void**)> regMr;
  std::function<Res(void*, void*)> deregMr;
  std::function<Res(void*, void*, size_t, void*, void**)> isend;
  std::function<Res(void*, int, void**, size_t*, void**, void**)> irecv;
  std::function<Res(void*, int, void**, int*, void**, void**)> iflush;
  std::function<Res(void*, int*, int*)> test;
  std::function<Res(void*)> closeSend, closeRecv, closeListen;
  std::function<Res()> finalize;  // no-op before v11
};

// dlopens `path` (RTLD_NOW|RTLD_LOCAL). Returns null and fills *err on failure.
void* harpToolsOpen(const std::string& path, std::string* err);
// Versions (12..8) whose ncclNetPlugin_vN symbol the library exports, newest first.
std::vector<int> harpToolsVersions(void* dl);
// Builds the NetApi for one exported version. False if the symbol is missing.
bool harpToolsLoad(void* dl, int version, NetApi* out);

// A logger printing NCCL-style lines to stderr when HARP_TEST_VERBOSE is set (warnings always).
void harpToolsLogger(harp_abi::ncclDebugLogLevel level, unsigned long flags, const char* file,
                     int line, const char* fmt, ...);

}  // namespace harp_tools
