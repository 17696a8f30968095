// Engine: the one restartable object behind init/shutdown; owns the caller-facing parts and wires the driver.
//
// DESIGN. Caller threads call enqueue() (validates, pushes to the TensorQueue, rings this
// rank's doorbell) and wait() on Handles. Below the queue the engine is four parts, each with
// one job, which the Driver (driver.h) owns and runs:
//  - Mesh (mesh.h): rendezvous, topology, shared memory and links, as channels; built per init.
//  - Negotiator (negotiator.h): queue -> tensor table -> bit vectors / coordinator -> one plan
//    per cycle, identical on every rank.
//  - Executors (executor_pool.h): run a plan's data batches on a channel (HostExecutor, or a
//    DeviceExecutor for GPU tensors); with LIGHT_NUM_STREAMS > 1 each stream worker has its own
//    channel and executors (streams.h). They own the top-k residuals.
//  - Progress (progress.h): who drives — the background thread or a waiting caller — as a
//    state machine; the driver is its Cycle.
// Beside them: the Lifecycle (lifecycle.h: running, stopping, aborting, ended), the
// ProcessSets registry callers read, and the Tuning settings (tuning.h). Everything below the
// queue is touched only by the thread Progress lets drive. Errors fail every pending and future
// handle with the same Status.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "engine/handle.h"
#include "engine/lifecycle.h"
#include "engine/mesh.h"
#include "engine/process_sets.h"
#include "engine/stats.h"
#include "engine/tensor_queue.h"
#include "engine/timeline.h"
#include "engine/tuning.h"

namespace lightcc {

class DirectAllreduce;
class Driver;
class TopkStore;

class Engine {
 public:
  static Status create(const InitOptions& options, const Config& config, std::unique_ptr<Engine>* out);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues one tensor or a group (negotiated and fused together). Without `wake`
  // the background thread is not rung: the caller promises to wait() at once and drive it.
  Status enqueue(std::vector<TensorEntry> entries, bool wake = true);
  // Blocks until the handle completes, running the engine on this thread when nobody else is.
  Status wait(Handle& handle);
  // A synchronous single-tensor op: an allreduce of host memory or a barrier on a one-host job
  // first tries a direct step (direct_allreduce.h). *done false: enqueue and wait as usual.
  Status runDirect(const TensorEntry& e, bool* done);
  // Coordinated stop: every rank leaves its loop in the same cycle; pending work is aborted.
  Status shutdown();
  // Any thread: end this rank's engine now, without its peers' votes (one of them is gone): every
  // pending and blocked operation fails with `why` within a wait's poll. shutdown() still joins.
  void abort(const Status& why);

  const Topology& topology() const { return topo_; }
  const EngineStats& stats() const { return stats_; }
  const Config& config() const { return config_; }
  std::map<int32_t, std::vector<int>> processSets() const { return sets_.all(); }
  Status startTimeline(const std::string& path, bool mark_cycles);
  Status stopTimeline();
  // Top-k error-feedback residuals by tensor name ("<set id>:<name>" outside the global set),
  // for checkpointing; set replaces one (its size must match the tensor's element count).
  // GPU tensors' residuals are copied from the device (after their last step finished).
  Status topkResiduals(std::map<std::string, std::vector<float>>* out);
  Status setTopkResidual(const std::string& name, const float* data, size_t count);
  // Any thread: per-tensor top-k declarations from the fronts and their read-back (topk_store.h).
  TopkStore& topkStore();
  // The tunables in force (current(): any thread), the cost model fixed at init.
  const Tuning& tuning() const;
  // A caller is about to block on a handle: wake the engine if it holds tensors for a bucket.
  void nudgeFusion();
  // Whether the fronts should start gradient collectives during the backward pass
  // (LIGHTCC_OVERLAP, decided at init: engine/overlap_choice.h).
  bool overlapBackward() const { return overlap_backward_; }

 private:
  Engine(const InitOptions& options, const Config& config);
  Status validate(const TensorEntry& e) const;
  // A group this rank rejected goes to negotiation anyway, marked with the reason, so peers
  // that submitted theirs get the error too instead of waiting for this rank forever.
  void withdraw(std::vector<TensorEntry> entries, const Status& why);

  const InitOptions options_;
  const Config config_;
  Topology topo_;
  EngineStats stats_;
  // Shared with caller threads.
  TensorQueue queue_;
  Lifecycle life_;
  ProcessSets sets_;
  Timeline timeline_;
  std::unique_ptr<Driver> driver_;  // everything below the queue
  std::thread thread_;              // the background thread: driver_->loop()
  // Callers' direct steps (one-host jobs). Declared after driver_, whose mesh it reads: it goes first.
  std::unique_ptr<DirectAllreduce> direct_;
  std::vector<int> world_;  // 0..size-1, the global set's members, for the direct path's checks
  bool overlap_backward_ = true;
};

}  // namespace lightcc
