// Engine: the one restartable object behind init/shutdown; wires the engine's four parts.
//
// DESIGN. Caller threads call enqueue() (validates, pushes to the TensorQueue, rings this
// rank's doorbell) and wait() on Handles. Below the queue the engine is four parts, each with
// one job, and this class only owns and wires them:
//  - Mesh (mesh.h): rendezvous, topology, shared memory and links, as channels; built per init.
//  - Negotiator (negotiator.h): queue -> tensor table -> bit vectors / coordinator -> one plan
//    per cycle, identical on every rank.
//  - Executor (executor.h): runs a plan's data batches on one channel (HostExecutor; a device
//    executor implements the same interface). With LIGHT_NUM_STREAMS > 1 each stream worker
//    has its own channel and executor (streams.h); dispatch (dispatch.cc) runs fences itself.
//  - Progress (progress.h): who drives — the background thread or a waiting caller — as a
//    state machine; the engine is its Cycle (driving.cc).
// Everything below the queue is touched only by the thread Progress lets drive. Errors fail
// every pending and future handle with the same Status. The process-set table is also read by
// callers; sets_mu_ guards it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "engine/autotuner.h"
#include "engine/batch.h"
#include "engine/coordinator.h"
#include "engine/cost_model.h"
#include "engine/device_executor.h"
#include "engine/device_pacing.h"
#include "engine/executor.h"
#include "engine/fusion_scheduler.h"
#include "engine/mesh.h"
#include "engine/negotiator.h"
#include "engine/progress.h"
#include "engine/response_cache.h"
#include "engine/stats.h"
#include "engine/streams.h"
#include "engine/tensor_key.h"
#include "engine/tensor_queue.h"
#include "engine/tensor_table.h"
#include "engine/timeline.h"
#include "engine/topk_store.h"

namespace lightcc {

class Engine : private Progress::Cycle {
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
  // Coordinated stop: every rank leaves its loop in the same cycle; pending work is aborted.
  Status shutdown();

  const Topology& topology() const { return topo_; }
  const EngineStats& stats() const { return stats_; }
  const Config& config() const { return config_; }
  std::map<int32_t, std::vector<int>> processSets() const;
  Status startTimeline(const std::string& path, bool mark_cycles);
  Status stopTimeline();
  // Top-k error-feedback residuals by tensor name ("<set id>:<name>" outside the global set),
  // for checkpointing; set replaces one (its size must match the tensor's element count).
  // GPU tensors' residuals are copied from the device (after their last step finished).
  Status topkResiduals(std::map<std::string, std::vector<float>>* out) {
    *out = topk_.residuals();
    for (auto it = out->begin(); it != out->end();) {  // taken over by a GPU tensor: moved to the device
      it = it->second.empty() ? out->erase(it) : std::next(it);
    }
    return device_topk_.residuals(out);
  }
  Status setTopkResidual(const std::string& name, const float* data, size_t count) {
    bool on_device = false;
    LIGHTCC_RETURN_IF_ERROR(device_topk_.setResidual(name, data, count,
                                                     static_cast<uint64_t>(config_.topk_warmup_steps), &on_device));
    return on_device ? Status::OK() : topk_.setResidual(name, data, count);
  }
  // Fusion (fusion_hooks.cc). The cost model is fixed at init; the options and the top-k
  // threshold move only with autotune, and are safe to read from any thread.
  const CostModel& costModel() const { return cost_model_; }
  FusionScheduler::Options fusionOptions() const {
    std::lock_guard<std::mutex> lock(tune_mu_);
    return fusion_options_;
  }
  int64_t topkThresholdBytes() const { return topk_threshold_bytes_.load(); }
  // Autotune (tune_hooks.cc): the parameters in force on this rank, their generation and the
  // cycle that applied it (the same on every rank), and whether the search has frozen.
  struct TuneState {
    TuneParams params;
    uint64_t generation = 0;
    uint64_t applied_cycle = 0;
    bool frozen = false;
    std::vector<std::pair<uint64_t, TuneParams>> history;  // (applied cycle, params) per generation
  };
  TuneState tuneState() const {
    std::lock_guard<std::mutex> lock(tune_mu_);
    return tune_state_;
  }
  // A caller is about to block on a handle: wake the engine if it holds tensors for a bucket.
  void nudgeFusion();

 private:
  Engine(const InitOptions& options, const Config& config);
  Status bootstrap();  // engine.cc: the mesh, the process sets, negotiation, fusion, executors
  // driving.cc: the engine as Progress drives it (Progress::Cycle), and its end.
  void loop();
  bool workReady(bool background) override;
  bool urgent() override;
  bool asyncWork() override;
  Status timers(bool* want_cycle) override;
  Status run(bool background, bool* stop) override;
  Status sleep(const std::function<bool()>& ready, double max_us, bool spin) override;
  double idleUs(bool background) override;
  bool workLeft() override;
  void wake() override;
  void end(const Status& st) override;
  // A waiter that is not driving was interrupted: the thread that drives ends the engine with
  // `why` at its next look (waits inside a collective give up through the abort flag).
  void requestAbort(const Status& why);
  Status interrupted(Handle& handle);  // a waiter's signal: abort, then wait for its buffers
  // Peers that exited, or whose engine stopped, end this one too: checked while waiting for
  // work, often when something is pending (a peer that never answers would hang it otherwise).
  Status checkLiveness();
  Status checkMembership(const Request& r) const;
  Status validate(const TensorEntry& e) const;
  // A group this rank rejected goes to negotiation anyway, marked with the reason, so peers
  // that submitted theirs get the error too instead of waiting for this rank forever.
  void withdraw(std::vector<TensorEntry> entries, const Status& why);

  // cycle.cc
  Status runCycle(bool* stop);

  // tune_hooks.cc: rank 0's autotuner votes; every rank applies the agreed generation.
  Status setUpAutotune();
  void voteTune(Negotiator::Votes* votes) const;
  // A new generation in the plan: apply it before this cycle's fusion. When the fusion options
  // change, the old scheduler runs everything it holds with this cycle's responses (`batches`).
  Status applyTune(const Negotiator::Plan& plan, std::vector<ResponsePtr>* batches, bool* scheduled);
  void observeTune(const Negotiator::Plan& plan, std::chrono::steady_clock::time_point agreed);

  // fusion_hooks.cc
  Status setUpFusion();          // bootstrap: probe the cost model (cost), build the scheduler
  bool fusionWantsFlush() const;  // this rank asks every rank to run its held tensors now
  bool deviceReady();             // fewer than LIGHT_DEVICE_INFLIGHT GPU batches running here
  // GPU allreduces are held for a busy GPU and this rank's, busy at the last vote, is ready now.
  bool pacingWantsCycle();

  // dispatch.cc: each agreed response on the driving thread; data batches go to an executor.
  Status execute(const ResponsePtr& r);
  Status applyProcessSetChange(const Response& r);
  Status startExecutors();

  const InitOptions options_;
  const Config config_;
  Topology topo_;
  EngineStats stats_;

  // Shared with caller threads.
  TensorQueue queue_;
  std::atomic<bool> shutdown_requested_{false};
  std::atomic<bool> running_{false};
  mutable std::mutex sets_mu_;
  std::map<int32_t, std::vector<int>> set_ranks_;
  int32_t next_set_id_ = 1;
  Timeline timeline_;
  std::thread thread_;
  Status final_status_;
  Progress progress_{*this, &stats_.caller_cycles, &stats_.handoff_waits};  // who drives
  std::atomic<bool> abort_requested_{false};  // see requestAbort(); also host_'s abort flag
  std::mutex abort_mu_;
  Status abort_status_;                        // guarded by abort_mu_

  // Driving thread only (whoever Progress lets drive).
  std::unique_ptr<Mesh> mesh_;
  Channel* main_ = nullptr;         // the mesh's channel 0
  shm::HostGroup* host_ = nullptr;  // main_'s host group
  TopkStore topk_;
  ExecEnv exec_env_;
  DeviceTopkStore device_topk_;
  DeviceInflight device_inflight_;  // used by executors on stream threads too
  bool voted_device_ready_ = true;  // this rank's device_ready vote in the last cycle
  std::unique_ptr<RoutingExecutor> executor_;  // runs batches on main_ (without streams)
  std::vector<Executor*> stream_executors_;    // owned by streams_; aborted on a peer failure
  std::unique_ptr<Negotiator> negotiator_;
  Negotiator::Plan plan_;  // this cycle's agreed plan (its capacity is reused)
  CostModel cost_model_;
  FusionScheduler::Options fusion_options_;
  std::atomic<int64_t> topk_threshold_bytes_{0};  // LIGHT_TOPK_THRESHOLD, the cost model's, or autotune's
  std::unique_ptr<FusionScheduler> fusion_;
  std::atomic<bool> fusion_holding_{false};      // read by callers' nudgeFusion
  // Autotune (tune_hooks.cc); the live settings below start from the config.
  std::unique_ptr<Autotuner> autotuner_;  // rank 0 with HOROVOD_AUTOTUNE
  mutable std::mutex tune_mu_;            // guards fusion_options_ and tune_state_ for readers
  TuneState tune_state_;
  double cycle_time_ms_ = 0.0;  // HOROVOD_CYCLE_TIME, or autotune's
  int active_streams_ = 1;      // streams batches go to (of LIGHT_NUM_STREAMS)
  bool two_d_ = false;          // batches take the 2D algorithms (LIGHT_2D_ALLREDUCE, or autotune's)

  std::chrono::steady_clock::time_point last_cycle_end_;
  std::chrono::steady_clock::time_point last_maintenance_;
  std::chrono::steady_clock::time_point last_liveness_;
  bool busy_ = false;
  std::atomic<bool> shutdown_seen_{false};  // this rank asked to shut down (time below)
  std::chrono::steady_clock::time_point shutdown_asked_at_;
  bool shutdown_pending_ = false;  // some rank asked; keep cycling until work drains
  // LIGHT_NUM_STREAMS > 1. Declared last so its workers stop before anything they use goes.
  std::unique_ptr<Streams> streams_;
};

}  // namespace lightcc
