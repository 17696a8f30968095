// Engine: the one restartable object behind init/shutdown; owns the background thread.
//
// DESIGN. Caller threads call enqueue() (validates, pushes to the TensorQueue, rings this
// rank's doorbell) and wait on Handles. The background thread owns everything else: links,
// host group, response cache, coordinator state, process-set communicators, fusion buffer.
// It sleeps until local work arrives or a peer's cycle message does (both ring the doorbell),
// runs one negotiation cycle (cycle.cc), executes the agreed responses in order (executor.cc),
// and repeats. Errors on the background thread fail every pending and future handle with the
// same Status. The process-set table is the only state both sides read; a mutex guards it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/hierarchical.h"
#include "algorithms/set_comm.h"
#include "common/config.h"
#include "engine/coordinator.h"
#include "engine/cost_model.h"
#include "engine/fusion_scheduler.h"
#include "engine/response_cache.h"
#include "engine/tensor_queue.h"
#include "engine/timeline.h"
#include "transport/link.h"
#include "transport/net/net_plugin.h"
#include "transport/shm/host_group.h"

namespace lightcc {

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
  std::atomic<uint64_t> execute_ns{0};             // running the agreed responses
  std::atomic<uint64_t> cached_responses{0};       // tensors agreed through the bit vector
  std::atomic<uint64_t> coordinated_responses{0};  // tensors agreed through rank 0
  std::atomic<uint64_t> fused_batches{0};          // executed (fused) responses
  std::atomic<uint64_t> fusion_flushes{0};         // order/cost: cycles that ran partial buckets
  std::atomic<uint64_t> fusion_held{0};            // order/cost: tensors held for their bucket now
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

  // Validates and queues one tensor or a group (negotiated and fused together).
  Status enqueue(std::vector<TensorEntry> entries);
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
  void loop();
  Status validate(const TensorEntry& e) const;

  // cycle.cc
  Status runCycle(bool* stop);
  bool incomingCycle();
  Status postCycleReceives();
  Status exchangeBits(std::vector<uint64_t>* bits);
  Status sendBytes(Link* link, const std::string& bytes);
  Status recvBytes(Link* link, std::string* bytes);
  Status slowPath(std::vector<Response>* responses);
  void classifyNewEntries();
  void maintenance(bool* want_cycle);

  // fusion_hooks.cc
  Status setUpFusion();          // bootstrap: probe the cost model (cost), build the scheduler
  bool fusionWantsFlush() const;  // this rank asks every rank to run its held tensors now

  // executor.cc
  Status execute(const Response& r);
  Status executeAllreduce(const Response& r, SetComm& comm);
  Status executeAllgather(const Response& r, SetComm& comm);
  Status executeBroadcast(const Response& r, SetComm& comm);
  Status executeAlltoall(const Response& r, SetComm& comm);
  Status executeReducescatter(const Response& r, SetComm& comm);
  Status executeTopk(const Response& r, SetComm& comm);
  bool topkEligible(const Response& r) const;
  Status applyProcessSetChange(const Response& r);
  void buildHierComm(int32_t id, const std::vector<int>& ranks);
  void completeEntry(int32_t set_id, const std::string& name, const Status& st, HandleResult result = {});
  void failEverything(const Status& st);
  SetComm makeSetComm(int32_t id, const std::vector<int>& ranks);

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

  // Background thread only.
  std::unique_ptr<shm::HostGroup> host_;
  std::unique_ptr<net::NetPlugin> net_plugin_;  // declared before the links that use it
  std::vector<std::unique_ptr<Link>> owned_links_;
  std::vector<Link*> world_links_;  // by global rank; null for self
  std::map<int32_t, SetComm> comms_;
  std::map<int32_t, HierComm> hier_;  // 2D communicators of the sets where LIGHT_2D_ALLREDUCE applies
  std::vector<std::string> hosts_;    // host id of every rank
  mutable std::mutex topk_mu_;        // guards topk_ against users saving/restoring residuals
  std::map<std::pair<int32_t, std::string>, TopkTensorState> topk_;
  kernels::TopkScratch topk_scratch_;
  std::unique_ptr<ResponseCache> cache_;
  std::unique_ptr<Coordinator> coordinator_;  // rank 0 only
  CostModel cost_model_;
  FusionScheduler::Options fusion_options_;
  int64_t topk_threshold_bytes_ = 0;             // LIGHT_TOPK_THRESHOLD, or the cost model's
  std::unique_ptr<FusionScheduler> fusion_;
  std::atomic<bool> fusion_holding_{false};      // read by callers' nudgeFusion

  enum class EntryState { kCached, kToSend, kSubmitted };
  struct Pending {
    TensorEntry entry;
    EntryState state = EntryState::kToSend;
    int bit = -1;
  };
  std::map<std::pair<int32_t, std::string>, Pending> pending_;
  std::vector<int> invalid_bits_;  // this rank's mismatches against the cache, this cycle
  bool joined_ = false;            // this rank called join() and waits for the others
  uint64_t cycle_ = 0;
  std::chrono::steady_clock::time_point last_cycle_end_;
  std::chrono::steady_clock::time_point last_maintenance_;
  bool busy_ = false;
  bool shutdown_seen_ = false;     // this rank asked to shut down (time below)
  std::chrono::steady_clock::time_point shutdown_asked_at_;
  bool shutdown_pending_ = false;  // some rank asked; keep cycling until work drains  // work arrived while the last cycle ran (then HOROVOD_CYCLE_TIME applies)
  std::vector<std::vector<uint64_t>> cycle_in_;  // posted receive buffers for peers' bits
  std::vector<LinkRequest*> cycle_req_;
  std::vector<bool> cycle_done_;
  std::vector<char> fusion_buffer_;
  Status link_error_;                      // a failure seen while polling for cycle messages
  std::vector<Response> stall_responses_;  // rank 0: stalled tensors to fail next cycle
};

}  // namespace lightcc
