// Runtime: one-time initialisation (params, secret policy, devices, instance threads).
#include "runtime.h"

#include <sched.h>

#include <cstdlib>
#include <mutex>

#include "log.h"

namespace harp {
namespace {
std::mutex g_init_mu;
std::atomic<Runtime*> g_runtime{nullptr};

std::vector<int> allowedCores() {
  std::vector<int> cores;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cores.push_back(c);
    }
  }
  return cores;
}

// The launcher's local rank, or 0: processes of one host pin their instances to different
// cores instead of all to the first N (a launcher that binds ranks to cores makes it moot).
int localRank() {
  for (const char* name : {"LIGHTCC_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", "MPI_LOCALRANKID"}) {
    const char* v = std::getenv(name);
    if (v && *v) {
      char* end = nullptr;
      long x = std::strtol(v, &end, 10);
      if (end && *end == 0 && x >= 0 && x < 4096) return static_cast<int>(x);
    }
  }
  return 0;
}
}  // namespace

Runtime* harpRuntime() { return g_runtime.load(std::memory_order_acquire); }

harp_abi::ncclResult_t harpRuntimeInit(harp_abi::ncclDebugLogger_t logger) {
  std::lock_guard<std::mutex> lock(g_init_mu);
  Params params;
  std::string err = harpParseParams(&params);
  harpSetLogger(logger, err.empty() ? params.log_level : harp_abi::NCCL_LOG_WARN);
  if (g_runtime.load() != nullptr) return harp_abi::ncclSuccess;
  if (!err.empty()) {
    HARP_WARN("init: %s", err.c_str());
    return harp_abi::ncclInvalidUsage;
  }
  if (params.secret.empty() && !params.allow_no_secret) {
    HARP_WARN("init: no job secret: set HARP_JOB_SECRET (lightcc sets it from its bootstrap), or "
              "HARP_ALLOW_NO_SECRET=1 to run flows without authentication");
    return harp_abi::ncclInvalidUsage;
  }
  // The Runtime lives for the whole process (see runtime.h): it is deliberately never freed.
  std::unique_ptr<Runtime> rt(new Runtime());
  rt->params = params;
  rt->devices = harpDiscoverDevices(params, &err);
  if (rt->devices.empty()) {
    HARP_WARN("init: %s", err.c_str());
    return harp_abi::ncclSystemError;
  }
  bool any_nic = false;
  for (const Device& d : rt->devices) any_nic |= !d.pci_path.empty();
  if (params.transfer.zc_mode == ZeroCopyMode::kAuto && !any_nic) {
    // Loopback/veth/bridges deliver locally and the kernel copies zero-copy sends anyway, so
    // zero-copy only adds notification work there. HARP_ZC=uring|msg forces it (tests do).
    params.transfer.zc_mode = ZeroCopyMode::kOff;
    rt->params.transfer.zc_mode = ZeroCopyMode::kOff;
    HARP_INFO("init: zero-copy off: only virtual/local devices (set HARP_ZC=uring or msg to force)");
  }
  std::vector<int> cores = params.instances.cores.empty() ? allowedCores() : params.instances.cores;
  const size_t first = params.instances.cores.empty() ? static_cast<size_t>(localRank()) * params.ninstances : 0;
  for (int i = 0; i < params.ninstances; ++i) {
    int core = (cores.empty() || !params.instances.pin) ? -1 : cores[(first + static_cast<size_t>(i)) % cores.size()];
    rt->workers.push_back(std::make_unique<Worker>(i, core, params.transfer.zc_mode, params.instances.busy_poll_us));
  }
  HARP_INFO("init: %zu device(s), first %s; %d instance(s), %d flow(s)/comm, chunk %zu B, "
            "zero-copy %s from %zu B, busy poll %d us, auth %s", rt->devices.size(),
            rt->devices[0].name.c_str(), params.ninstances, params.nflows, params.transfer.chunk_bytes,
            rt->workers[0]->zcName(), params.transfer.zc_min_bytes, params.instances.busy_poll_us,
            params.secret.empty() ? "off" : "HMAC-SHA256");
  g_runtime.store(rt.release(), std::memory_order_release);
  return harp_abi::ncclSuccess;
}

}  // namespace harp
