// Engine: the one restartable object behind init/shutdown; owns the background thread.
//
// DESIGN. Caller threads call enqueue() (validates, pushes to the TensorQueue, rings this
// rank's doorbell) and wait on Handles. Everything below the queue — links, host group,
// response cache, coordinator state, process-set communicators, fusion buffer — is touched only
// with progress_mu_ held (progress.cc). The background thread holds it while it runs cycles: it
// sleeps until local work arrives or a peer's cycle message does (both ring the doorbell), runs
// one negotiation cycle (cycle.cc), executes the agreed responses in order (executor.cc), and
// repeats. A caller blocked in wait() takes the lock when it is free and runs the same cycles
// itself, so a synchronous op costs no thread hand-off. Errors fail every pending and future
// handle with the same Status. The process-set table is also read by callers; sets_mu_ guards it.
// With LIGHT_NUM_STREAMS > 1 agreed batches run on stream workers instead (streams.h); the
// cycle then only negotiates, dispatches, and runs fences (barrier, join, process-set changes)
// once every stream is idle, and waiting callers sleep on their handles instead of driving.
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

#include "algorithms/hierarchical.h"
#include "algorithms/set_comm.h"
#include "common/config.h"
#include "engine/coordinator.h"
#include "engine/cost_model.h"
#include "engine/fusion_scheduler.h"
#include "engine/response_cache.h"
#include "engine/streams.h"
#include "engine/tensor_key.h"
#include "engine/tensor_queue.h"
#include "engine/tensor_table.h"
#include "engine/timeline.h"
#include "transport/link.h"
#include "transport/net/net_plugin.h"
#include "transport/shm/host_group.h"

namespace lightcc {

namespace rendezvous {
class StoreClient;
}

struct InitOptions {
  int rank = 0;
  int size = 1;
  std::string hostname;          // ranks with equal host ids share memory
  std::string rendezvous_host;   // rank 0's store
  int rendezvous_port = 0;
  std::string secret;            // job secret (required when size > 1)
  uint64_t generation = 0;       // counts init() calls, so stale peers are told apart
  std::vector<std::vector<int>> process_sets;  // created at init, ids 1..n
  std::string bundled_net_plugin;              // path of the HARP plugin shipped with lightcc
};

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
  std::atomic<uint64_t> caller_cycles{0};          // cycles run by a caller waiting on a handle
  std::atomic<uint64_t> handoff_waits{0};          // waits that slept while another thread drove
};

struct Topology {
  int rank = 0, size = 1, local_rank = 0, local_size = 1, cross_rank = 0, cross_size = 1;
  bool homogeneous = true;
};

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
  std::map<std::string, std::vector<float>> topkResiduals() const;
  Status setTopkResidual(const std::string& name, const float* data, size_t count);
  // Fusion (fusion_hooks.cc). Fixed at init: safe to read from any thread afterwards.
  const CostModel& costModel() const { return cost_model_; }
  const FusionScheduler::Options& fusionOptions() const { return fusion_options_; }
  int64_t topkThresholdBytes() const { return topk_threshold_bytes_; }
  // A caller is about to block on a handle: wake the engine if it holds tensors for a bucket.
  void nudgeFusion();

 private:
  Engine(const InitOptions& options, const Config& config);
  Status bootstrap();  // bootstrap.cc
  // progress.cc
  void loop();
  bool workReady(bool engine_thread = false);
  bool maintenanceDue(bool* want_cycle);
  void endLoop(Status st);
  Status driveUntil(Handle& handle);
  void waitOutDrivers();
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
  bool incomingCycle();
  Status postCycleReceives();
  Status exchangeBits(std::vector<uint64_t>* bits);
  Status sendBytes(Link* link, const std::string& bytes);
  Status recvBytes(Link* link, std::string* bytes);
  Status slowPath(std::vector<ResponsePtr>* responses);
  void classifyNewEntries();
  void maintenance(bool* want_cycle);

  // fusion_hooks.cc
  Status setUpFusion();          // bootstrap: probe the cost model (cost), build the scheduler
  bool fusionWantsFlush() const;  // this rank asks every rank to run its held tensors now

  // executor.cc. execute() runs on the background thread; runBatch() and what it calls run on
  // whichever thread owns `ctx` (the background thread, or a stream worker) and read only the
  // batch, ctx, and immutable or locked engine state.
  Status execute(const ResponsePtr& r);
  Batch takeBatch(const ResponsePtr& r);
  Status runBatch(Batch& b, ExecContext& ctx);
  void failBatch(Batch& b, const Status& st);
  Status executeAllreduce(Batch& b, SetComm& comm, ExecContext& ctx);
  Status executeAllgather(Batch& b, SetComm& comm);
  Status executeBroadcast(Batch& b, SetComm& comm);
  Status executeAlltoall(Batch& b, SetComm& comm);
  Status executeReducescatter(Batch& b, SetComm& comm);
  Status executeTopk(Batch& b, SetComm& comm, ExecContext& ctx);
  bool topkEligible(const Response& r) const;
  Status applyProcessSetChange(const Response& r);
  void completeEntry(int32_t set_id, const std::string& name, const Status& st, HandleResult result = {});
  void completeBatchEntry(Batch& b, size_t index, const Status& st, HandleResult result = {});
  void failEverything(const Status& st);
  // bootstrap.cc: communicators of a set on the background thread's channel and every stream's.
  SetComm makeSetComm(const shm::HostGroup* host, const std::vector<Link*>& links, int32_t id,
                      const std::vector<int>& ranks);
  void buildHierComm(const shm::HostGroup* host, const std::vector<Link*>& links, std::map<int32_t, HierComm>* hier,
                     int32_t id, const std::vector<int>& ranks);
  void addSetComms(int32_t id, const std::vector<int>& ranks);
  void eraseSetComms(int32_t id);
  Status startStreams(rendezvous::StoreClient* store);

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
  std::mutex progress_mu_;             // held by whoever runs the engine (see DESIGN)
  std::atomic<bool> driving_{false};   // a caller holds progress_mu_ and runs cycles
  std::atomic<int> want_drive_{0};     // callers waiting for progress_mu_ to drive
  std::atomic<bool> stopped_{false};   // the loop has ended; every handle has been failed
  std::mutex driver_mu_;               // with driver_cv_: the background thread waits out a driver
  std::condition_variable driver_cv_;
  std::atomic<bool> handoff_{false};   // a driver left work behind for the background thread
  std::atomic<bool> abort_requested_{false};  // see requestAbort(); also host_'s abort flag
  std::mutex abort_mu_;
  Status abort_status_;                        // guarded by abort_mu_
  std::chrono::steady_clock::time_point last_drive_end_;  // guarded by driver_mu_

  // Background thread only.
  std::unique_ptr<shm::HostGroup> host_;
  std::unique_ptr<net::NetPlugin> net_plugin_;  // declared before the links that use it
  std::vector<std::unique_ptr<Link>> owned_links_;
  std::vector<Link*> world_links_;  // by global rank; null for self
  std::map<int32_t, SetComm> comms_;
  std::map<int32_t, HierComm> hier_;  // 2D communicators of the sets where LIGHT_2D_ALLREDUCE applies
  std::vector<std::string> hosts_;    // host id of every rank
  // Top-k state per tensor: topk_mu_ guards the map (entries are never erased, so pointers stay
  // valid), each entry's mutex its state (streams and users saving/restoring residuals).
  struct TopkEntry {
    mutable std::mutex mu;
    TopkTensorState state;
  };
  mutable std::mutex topk_mu_;
  std::map<std::pair<int32_t, std::string>, TopkEntry> topk_;
  kernels::TopkScratch topk_scratch_;
  std::unique_ptr<ResponseCache> cache_;
  std::unique_ptr<Coordinator> coordinator_;  // rank 0 only
  CostModel cost_model_;
  FusionScheduler::Options fusion_options_;
  int64_t topk_threshold_bytes_ = 0;             // LIGHT_TOPK_THRESHOLD, or the cost model's
  std::unique_ptr<FusionScheduler> fusion_;
  std::atomic<bool> fusion_holding_{false};      // read by callers' nudgeFusion

  TensorTable tensors_;              // every tensor by id; the pending ones with their entries
  std::vector<TensorEntry> fresh_;   // this cycle's drained queue (its capacity is reused)
  std::vector<ResponsePtr> agreed_;  // this cycle's agreed responses, and each one's tensor id
  std::vector<TensorId> agreed_ids_;
  size_t take_hint_ = 0;             // takeBatch's position in agreed_ids_
  std::vector<uint64_t> absent_mask_;  // cache bits of sets this rank is not in
  uint64_t absent_generation_ = ~uint64_t{0};  // the cache generation absent_mask_ was built for
  size_t absent_sets_ = 0;
  std::vector<int> invalid_bits_;  // this rank's mismatches against the cache, this cycle
  bool joined_ = false;            // this rank called join() and waits for the others
  uint64_t cycle_ = 0;
  std::chrono::steady_clock::time_point last_cycle_end_;
  std::chrono::steady_clock::time_point last_maintenance_;
  std::chrono::steady_clock::time_point last_liveness_;
  bool busy_ = false;
  std::atomic<bool> shutdown_seen_{false};  // this rank asked to shut down (time below)
  std::chrono::steady_clock::time_point shutdown_asked_at_;
  bool shutdown_pending_ = false;  // some rank asked; keep cycling until work drains
  std::vector<std::vector<uint64_t>> cycle_in_;  // posted receive buffers for peers' bits
  std::vector<LinkRequest*> cycle_req_;
  std::vector<bool> cycle_done_;
  std::vector<char> fusion_buffer_;
  Status link_error_;                      // a failure seen while polling for cycle messages
  std::vector<Response> stall_responses_;  // rank 0: stalled tensors to fail next cycle
  // LIGHT_NUM_STREAMS > 1. Declared last so its workers stop before anything they use goes.
  std::unique_ptr<Streams> streams_;
};

}  // namespace lightcc
