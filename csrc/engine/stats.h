// EngineStats: counters the driving thread and stream workers bump and callers read.
#pragma once

#include <atomic>
#include <cstdint>

namespace lightcc {

// Counters the engine thread bumps and callers read (lightcc._core.stats()), so benchmarks can
// separate negotiation from execution without instrumenting the data path.
struct EngineStats {
  std::atomic<uint64_t> cycles{0};
  std::atomic<uint64_t> slow_cycles{0};            // cycles that needed the coordinator
  std::atomic<uint64_t> negotiate_ns{0};           // cycle start until the response list is agreed
  std::atomic<uint64_t> negotiate_wait_ns{0};      // of which: waiting for peers' bit vectors
  std::atomic<uint64_t> execute_ns{0};             // running the agreed responses
  std::atomic<uint64_t> cached_responses{0};       // tensors agreed through the bit vector
  std::atomic<uint64_t> coordinated_responses{0};  // tensors agreed through rank 0
  std::atomic<uint64_t> fused_batches{0};          // executed (fused) responses
  std::atomic<uint64_t> stream_batches{0};         // batches run by stream workers (LIGHT_NUM_STREAMS > 1)
  std::atomic<uint64_t> streams_busy_max{0};       // most batches ever running at once on streams
  std::atomic<uint64_t> fusion_flushes{0};         // order/cost: cycles that ran partial buckets
  std::atomic<uint64_t> fusion_held{0};            // order/cost: tensors held for their bucket now
  std::atomic<uint64_t> fusion_buckets{0};         // order/cost: buckets of the plan that have members
  std::atomic<uint64_t> caller_cycles{0};          // cycles run by a caller waiting on a handle
  std::atomic<uint64_t> handoff_waits{0};          // waits that slept while another thread drove
  std::atomic<uint64_t> device_batches{0};         // batches run by a device executor (GPU, or emulated)
  // Host executors' data collectives: bytes this rank posted on its links (shared-memory staging
  // of one-host collectives is not counted), all of them and those of top-k batches.
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> topk_bytes_sent{0};
  std::atomic<uint64_t> topk_batches{0};        // batches the sparse exchange ran
  std::atomic<uint64_t> topk_dense_batches{0};
  std::atomic<uint64_t> two_d_batches{0};       // host batches run by a 2D (hierarchical) schedule  // top-k batches run dense: sparse would move more bytes
  std::atomic<uint64_t> device_allocs{0};          // device executors' own allocations (device::Device::alloc)
  std::atomic<uint64_t> device_alloc_bytes{0};     // and their bytes
  std::atomic<uint64_t> device_front_outputs{0};   // device outputs the fronts' allocators made
  std::atomic<uint64_t> net_links{0};              // links to ranks on other hosts, all channels (set at init)
  std::atomic<uint64_t> shm_links{0};              // links to ranks on this host, all channels (set at init)
  std::atomic<uint64_t> direct_ops{0};             // synchronous allreduces run in a direct step (direct_allreduce.h)
  std::atomic<uint64_t> direct_declined{0};        // direct steps declined: the engine ran those
};

}  // namespace lightcc
