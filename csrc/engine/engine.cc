// Engine: lifecycle, request validation, and the background loop's outer shape.
#include "engine/engine.h"

#include <algorithm>

#include "algorithms/adasum.h"
#include "common/logging.h"
#include "engine/cpu_binding.h"

namespace lightcc {

Engine::Engine(const InitOptions& options, const Config& config)
    : options_(options),
      config_(config),
      queue_([this] {
        if (host_) host_->wakeSelf();
        // The background thread may be sitting out a caller's grace period; taking the mutex
        // orders this push before its next look at the queue, so the notify cannot be lost.
        { std::lock_guard<std::mutex> d(driver_mu_); }
        driver_cv_.notify_all();
      }) {
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

Status Engine::validate(const TensorEntry& e) const {
  const Request& r = e.request;
  std::vector<int> ranks;
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    auto it = set_ranks_.find(r.process_set_id);
    if (it == set_ranks_.end()) {
      return Status::InvalidArgument("process set " + std::to_string(r.process_set_id) +
                                     " is not registered (was it removed?)");
    }
    ranks = it->second;
  }
  auto me = std::find(ranks.begin(), ranks.end(), topo_.rank);
  if (me == ranks.end()) {
    return Status::InvalidArgument("rank " + std::to_string(topo_.rank) +
                                   " is not a member of process set " +
                                   std::to_string(r.process_set_id));
  }
  const std::string what = "tensor '" + r.name + "'";
  for (int64_t d : r.shape) {
    if (d < 0) return Status::InvalidArgument(what + " has a negative dimension");
  }
  if (r.reduce_op == ReduceOp::kAdasum && r.op == OpType::kReducescatter) {
    return Status::InvalidArgument(what + ": reducescatter does not support Adasum; use Average or Sum");
  }
  if (r.reduce_op == ReduceOp::kAdasum && r.op == OpType::kAllreduce) {
    const std::string why = adasumUnsupported(static_cast<int>(ranks.size()), r.dtype);
    if (!why.empty()) return Status::InvalidArgument("rank " + std::to_string(topo_.rank) + ", " + what + ": " + why);
  }
  if ((r.op == OpType::kAllgather || r.op == OpType::kAlltoall) && r.shape.empty()) {
    return Status::InvalidArgument(what + ": " + std::string(opTypeName(r.op)) +
                                   " needs a tensor with at least one dimension");
  }
  if (r.op == OpType::kReducescatter && r.shape.empty()) {
    return Status::InvalidArgument(what + ": reducescatter needs a tensor with at least one dimension");
  }
  if (r.op == OpType::kBroadcast && std::find(ranks.begin(), ranks.end(), r.root) == ranks.end()) {
    return Status::InvalidArgument(what + ": root rank " + std::to_string(r.root) +
                                   " is not in process set " + std::to_string(r.process_set_id));
  }
  if (r.op == OpType::kAlltoall && !r.aux.empty()) {
    if (r.aux.size() != ranks.size()) {
      return Status::InvalidArgument(what + ": alltoall splits has " + std::to_string(r.aux.size()) +
                                     " entries, expected one per rank (" + std::to_string(ranks.size()) + ")");
    }
    int64_t sum = 0;
    for (int64_t s : r.aux) {
      if (s < 0) return Status::InvalidArgument(what + ": alltoall splits must be non-negative");
      sum += s;
    }
    if (sum != r.shape[0]) {
      return Status::InvalidArgument(what + ": alltoall splits sum to " + std::to_string(sum) +
                                     " but the first dimension is " + std::to_string(r.shape[0]));
    }
  }
  if (r.op == OpType::kAlltoall && r.aux.empty() && r.shape[0] % static_cast<int64_t>(ranks.size()) != 0) {
    return Status::InvalidArgument(what + ": without splits, alltoall needs the first dimension (" +
                                   std::to_string(r.shape[0]) + ") divisible by the process set size (" +
                                   std::to_string(ranks.size()) + ")");
  }
  if (r.op == OpType::kAddProcessSet && !config_.dynamic_process_sets) {
    return Status::InvalidArgument(
        "add_process_set after init needs HOROVOD_DYNAMIC_PROCESS_SETS=1 (set it on every rank)");
  }
  return Status::OK();
}

Status Engine::enqueue(std::vector<TensorEntry> entries, bool wake) {
  if (!running_) {
    return final_status_.ok() ? Status::PreconditionFailed("lightcc has been shut down; call init() first")
                              : final_status_;
  }
  for (auto& e : entries) {
    e.request.rank = topo_.rank;
    if (e.request.op == OpType::kAlltoall && e.request.aux.empty() && !e.request.shape.empty()) {
      // Even splits: fill them in so the engine has one code path.
      std::vector<int> ranks;
      {
        std::lock_guard<std::mutex> lock(sets_mu_);
        auto it = set_ranks_.find(e.request.process_set_id);
        if (it != set_ranks_.end()) ranks = it->second;
      }
      LIGHTCC_RETURN_IF_ERROR(validate(e));
      e.request.aux.assign(ranks.size(), e.request.shape[0] / static_cast<int64_t>(ranks.size()));
    }
    LIGHTCC_RETURN_IF_ERROR(validate(e));
  }
  // With streams callers never drive (wait() sleeps on the handle), so their work is the engine
  // thread's to take even when the caller said it would wait at once.
  return queue_.push(std::move(entries), wake || streams_ != nullptr);
}

Status Engine::shutdown() {
  if (thread_.joinable()) {
    shutdown_requested_ = true;
    driver_cv_.notify_all();
    host_->wakeSelf();
    thread_.join();
  }
  timeline_.stop();
  running_ = false;
  return Status::OK();
}

void Engine::failEverything(const Status& st) {
  queue_.close(st);
  while (tensors_.anyPending()) tensors_.takePending(tensors_.pending().back()).handle->complete(st);
}

}  // namespace lightcc
