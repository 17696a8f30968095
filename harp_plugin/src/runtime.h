// Runtime: the plugin's process-wide state — params, devices and the engine instances.
//
// DESIGN. NCCL's plugin API is process-global (init may be called once per communicator in v11+),
// so HARP keeps one Runtime, built by the first successful init and kept for the life of the
// process (the library is linked -z nodelete so instance threads never outlive their code).
// It is immutable after init except for the round-robin lane counter and the connector
// registry (control path, mutex).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "devices.h"
#include "harp/abi_common.h"
#include "params.h"
#include "worker.h"

namespace harp {

struct Runtime {
  Params params;
  std::vector<Device> devices;
  std::vector<std::unique_ptr<Worker>> workers;
  std::atomic<uint32_t> next_lane_base{0};
  std::mutex registry_mu;                      // control path only
  std::unordered_set<const void*> connectors;  // live connect-side states (handle validation)
};

// Idempotent: the first call parses params, discovers devices and starts the instances.
harp_abi::ncclResult_t harpRuntimeInit(harp_abi::ncclDebugLogger_t logger);
// Null until init succeeded.
Runtime* harpRuntime();

}  // namespace harp
