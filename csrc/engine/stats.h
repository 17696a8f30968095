// EngineStats: counters the driving thread and stream workers bump and callers read.
#pragma once

#include <atomic>
#include <cstdint>

namespace lightcc {

using Counter = std::atomic<uint64_t>;

// The driving thread's cycles: negotiation against execution, and who drove them.
struct CycleStats {
  Counter cycles{0};
  Counter slow_cycles{0};            // cycles that needed the coordinator
  Counter negotiate_ns{0};           // cycle start until the response list is agreed
  Counter negotiate_wait_ns{0};      // of which: waiting for peers' bit vectors
  Counter execute_ns{0};             // running the agreed responses
  Counter cached_responses{0};       // tensors agreed through the bit vector
  Counter coordinated_responses{0};  // tensors agreed through rank 0
  Counter fused_batches{0};          // executed (fused) responses
  Counter caller_cycles{0};          // cycles run by a caller waiting on a handle
  Counter handoff_waits{0};          // waits that slept while another thread drove
};

// Which schedules ran the batches.
struct BatchStats {
  Counter stream_batches{0};      // batches run by stream workers (LIGHT_NUM_STREAMS > 1)
  Counter streams_busy_max{0};    // most batches ever running at once on streams
  Counter device_batches{0};      // batches run by a device executor (GPU, or emulated)
  Counter two_d_batches{0};       // host batches run by a 2D (hierarchical) schedule
  Counter topk_batches{0};        // batches the sparse exchange ran
  Counter topk_dense_batches{0};  // top-k batches run dense: sparse would move more bytes
  Counter direct_ops{0};          // synchronous allreduces run in a direct step (direct_allreduce.h)
  Counter direct_declined{0};     // direct steps declined: the engine ran those
};

// The order/cost fusion schedulers' buckets.
struct FusionStats {
  Counter fusion_flushes{0};  // cycles that ran partial buckets
  Counter fusion_held{0};     // tensors held for their bucket now
  Counter fusion_buckets{0};  // buckets of the plan that have members
};

// Host executors' data collectives: bytes this rank posted on its links (shared-memory staging
// of one-host collectives is not counted), all of them and those of top-k batches; and the links.
struct TrafficStats {
  Counter bytes_sent{0};
  Counter topk_bytes_sent{0};
  Counter net_links{0};  // links to ranks on other hosts, all channels (set at init)
  Counter shm_links{0};  // links to ranks on this host, all channels (set at init)
};

// Device executors' memory: a test asserts none is allocated per call once scratch has grown.
struct DeviceMemoryStats {
  Counter device_allocs{0};         // device executors' own allocations (device::Device::alloc)
  Counter device_alloc_bytes{0};    // and their bytes
  Counter device_front_outputs{0};  // device outputs the fronts' allocators made
};

// Counters the engine thread bumps and callers read (lightcc._core.stats(), one flat dict), so
// benchmarks can separate negotiation from execution without instrumenting the data path.
struct EngineStats {
  CycleStats cycle;
  BatchStats batches;
  FusionStats fusion;
  TrafficStats traffic;
  DeviceMemoryStats device_memory;
};

}  // namespace lightcc
