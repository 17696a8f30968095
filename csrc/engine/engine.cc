// Engine: lifecycle, request validation, and the background loop's outer shape.
#include "engine/engine.h"

#include <algorithm>

#include "common/logging.h"
#include "engine/cpu_binding.h"
#include "engine/validate.h"

namespace lightcc {

Engine::Engine(const InitOptions& options, const Config& config)
    : options_(options),
      config_(config),
      // The background thread may be asleep, or sitting out a caller's grace period.
      queue_([this] {
        if (host_) progress_.poke();
      }),
      topk_(config_) {
  topo_.rank = options.rank;
  topo_.size = options.size;
}

Status Engine::create(const InitOptions& options, const Config& config, std::unique_ptr<Engine>* out) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return Status::InvalidArgument("rank " + std::to_string(options.rank) + " is outside size " +
                                   std::to_string(options.size));
  }
  setLogLevel(config.log_level);
  setLogRank(options.rank);
  std::unique_ptr<Engine> engine(new Engine(options, config));
  LIGHTCC_RETURN_IF_ERROR(engine->bootstrap());
  if (!config.timeline_path.empty() && config.timeline_path != "DYNAMIC" && options.rank == 0) {
    LIGHTCC_RETURN_IF_ERROR(engine->timeline_.start(config.timeline_path, config.timeline_mark_cycles));
  }
  if (config.bind_cores) {
    LIGHTCC_RETURN_IF_ERROR(bindToLocalCores(engine->topo_.local_rank, engine->topo_.local_size)
                                .withContext("rank " + std::to_string(options.rank)));
  }
  engine->running_ = true;
  engine->thread_ = std::thread([e = engine.get()] { e->loop(); });
  *out = std::move(engine);
  return Status::OK();
}

Status Engine::bootstrap() {
  LIGHTCC_RETURN_IF_ERROR(Mesh::build(options_, config_, &abort_requested_, &mesh_));
  topo_ = mesh_->topology();
  main_ = &mesh_->channel(0);
  host_ = main_->host.get();
  // Process sets: 0 is everyone; the ones passed to init get ids 1..n in order.
  std::vector<int> all(topo_.size);
  for (int r = 0; r < topo_.size; ++r) all[r] = r;
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    set_ranks_[0] = all;
    for (const auto& ranks : options_.process_sets) {
      std::vector<int> sorted = ranks;
      std::sort(sorted.begin(), sorted.end());
      set_ranks_[next_set_id_++] = sorted;
    }
    for (const auto& [id, ranks] : set_ranks_) mesh_->addSet(id, ranks);
  }
  negotiator_ = std::make_unique<Negotiator>(config_, topo_, *main_, queue_, timeline_, stats_);
  LIGHTCC_RETURN_IF_ERROR(setUpFusion());  // may probe the links: before the cycle receives are posted
  LIGHTCC_RETURN_IF_ERROR(startExecutors());
  LIGHTCC_RETURN_IF_ERROR(setUpAutotune());
  return negotiator_->start();
}

Status Engine::startExecutors() {
  exec_env_.config = &config_;
  exec_env_.rank = topo_.rank;
  exec_env_.timeline = &timeline_;
  exec_env_.topk = &topk_;
  exec_env_.topk_threshold_bytes = topk_threshold_bytes_.load();
  exec_env_.release_name = [this](int32_t set, const std::string& name) { queue_.finish(set, name); };
  exec_env_.device_topk = &device_topk_;
  exec_env_.device_batches = &stats_.device_batches;
  exec_env_.device_inflight = &device_inflight_;
  exec_env_.net_plugin = config_.net_plugin.empty() ? options_.bundled_net_plugin : config_.net_plugin;
  exec_env_.nccl_library = config_.nccl_library.empty() ? options_.nccl_library : config_.nccl_library;
  exec_env_.job_secret = options_.secret;
  executor_ = std::make_unique<RoutingExecutor>(exec_env_, *main_);
  if (mesh_->channels() == 1) return Status::OK();
  // LIGHT_NUM_STREAMS > 1: every further channel gets a worker with its own executor.
  std::vector<Channel*> channels;
  std::vector<std::unique_ptr<Executor>> executors;
  for (int c = 1; c < mesh_->channels(); ++c) {
    channels.push_back(&mesh_->channel(c));
    executors.push_back(std::make_unique<RoutingExecutor>(exec_env_, mesh_->channel(c)));
    stream_executors_.push_back(executors.back().get());
  }
  streams_ = std::make_unique<Streams>(std::move(channels), std::move(executors), host_,
                                       Streams::Counters{&stats_.stream_batches, &stats_.streams_busy_max});
  streams_->start();
  return Status::OK();
}

Engine::~Engine() {
  Status ignored = shutdown();
  (void)ignored;
}

std::map<int32_t, std::vector<int>> Engine::processSets() const {
  std::lock_guard<std::mutex> lock(sets_mu_);
  return set_ranks_;
}

Status Engine::startTimeline(const std::string& path, bool mark_cycles) {
  if (topo_.rank != 0) return Status::OK();
  return timeline_.start(path, mark_cycles);
}

Status Engine::stopTimeline() {
  timeline_.stop();
  return Status::OK();
}

Status Engine::checkMembership(const Request& r) const {
  std::lock_guard<std::mutex> lock(sets_mu_);
  auto it = set_ranks_.find(r.process_set_id);
  if (it == set_ranks_.end()) {
    return Status::InvalidArgument("process set " + std::to_string(r.process_set_id) +
                                   " is not registered (was it removed?)");
  }
  if (std::find(it->second.begin(), it->second.end(), topo_.rank) == it->second.end()) {
    return Status::InvalidArgument("rank " + std::to_string(topo_.rank) + " is not a member of process set " +
                                   std::to_string(r.process_set_id));
  }
  return Status::OK();
}

Status Engine::validate(const TensorEntry& e) const {
  LIGHTCC_RETURN_IF_ERROR(checkMembership(e.request));
  // Sets are only ever added or erased, never changed under their id, so the members read here
  // stay what they were; holding the lock keeps the entry itself alive while we look.
  std::lock_guard<std::mutex> lock(sets_mu_);
  return validateRequest(e.request, {topo_.rank, &set_ranks_.at(e.request.process_set_id),
                                     config_.dynamic_process_sets});
}

Status Engine::enqueue(std::vector<TensorEntry> entries, bool wake) {
  if (!running_) {
    return final_status_.ok() ? Status::PreconditionFailed("lightcc has been shut down; call init() first")
                              : final_status_;
  }
  for (auto& e : entries) e.request.rank = topo_.rank;
  for (auto& e : entries) {
    Status st = validate(e);
    if (st.ok() && e.request.op == OpType::kAlltoall && e.request.aux.empty() && !e.request.shape.empty()) {
      // Even splits: fill them in so the engine has one code path.
      std::lock_guard<std::mutex> lock(sets_mu_);
      const int64_t n = static_cast<int64_t>(set_ranks_.at(e.request.process_set_id).size());
      e.request.aux.assign(static_cast<size_t>(n), e.request.shape[0] / n);
    }
    if (!st.ok()) {
      withdraw(std::move(entries), st);
      return st;
    }
  }
  // With streams callers never drive (wait() sleeps on the handle), so their work is the engine
  // thread's to take even when the caller said it would wait at once.
  return queue_.push(std::move(entries), wake || streams_ != nullptr);
}

void Engine::withdraw(std::vector<TensorEntry> entries, const Status& why) {
  if (topo_.size == 1) return;
  for (auto& e : entries) {
    // Only ranks in the set take part in its negotiation; outside it there is nobody to tell.
    if (!checkMembership(e.request).ok()) return;
  }
  for (auto& e : entries) {
    e.request.error = why.message();
    e.input = nullptr;
    e.output = nullptr;
    e.handle = std::make_shared<Handle>();  // nobody waits on it; negotiation completes it
  }
  // A name already in flight here cannot be withdrawn twice; the first submission speaks for it.
  Status ignored = queue_.push(std::move(entries), true);
  (void)ignored;
}

Status Engine::shutdown() {
  if (thread_.joinable()) {
    shutdown_requested_ = true;
    progress_.poke();
    thread_.join();
  }
  timeline_.stop();
  running_ = false;
  return Status::OK();
}


}  // namespace lightcc
