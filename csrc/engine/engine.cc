// Engine: lifecycle, request validation, and the background loop's outer shape.
#include "engine/engine.h"

#include <algorithm>

#include "common/logging.h"
#include "engine/cpu_binding.h"
#include "engine/direct_allreduce.h"
#include "engine/driver.h"
#include "engine/overlap_choice.h"
#include "engine/validate.h"

namespace lightcc {

Engine::Engine(const InitOptions& options, const Config& config)
    : options_(options),
      config_(config),
      queue_([this] {
        if (driver_) driver_->poke();
      }) {
  topo_.rank = options.rank;
  topo_.size = options.size;
  driver_ = std::make_unique<Driver>(Driver::Shared{options_, config_, topo_, stats_, queue_, life_, sets_, timeline_});
}

Status Engine::create(const InitOptions& options, const Config& config, std::unique_ptr<Engine>* out) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return Status::InvalidArgument("rank " + std::to_string(options.rank) + " is outside size " +
                                   std::to_string(options.size));
  }
  setLogLevel(config.diagnostics.log_level);
  setLogRank(options.rank);
  std::unique_ptr<Engine> engine(new Engine(options, config));
  LIGHTCC_RETURN_IF_ERROR(engine->driver_->bootstrap());
  if (!config.diagnostics.timeline_path.empty() && config.diagnostics.timeline_path != "DYNAMIC" && options.rank == 0) {
    const DiagnosticsConfig& d = config.diagnostics;
    LIGHTCC_RETURN_IF_ERROR(engine->timeline_.start(d.timeline_path, d.timeline_mark_cycles));
  }
  const Topology& topo = engine->topo_;
  LIGHTCC_RETURN_IF_ERROR(bindThisRank(config.placement.binding, topo.rank, topo.local_rank, topo.local_size));
  const OverlapChoice overlap =
      decideOverlap(config.placement.overlap, topo.local_size == topo.size, topo.size, coresOfThisThread());
  engine->overlap_backward_ = overlap.overlap;
  LIGHTCC_LOG(kInfo) << "Gradient collectives start " << (overlap.overlap ? "during the backward pass" : "when the step waits")
                     << " (" << overlap.why << ")";
  const shm::HostGroup* host = engine->driver_->hostGroup();
  // Not beside the flags that ask for the engine's own algorithms on one host (tests, benchmarks).
  if (config.shm.direct && host != nullptr && host->direct(0) != nullptr && !engine->driver_->executors().hasStreams() &&
      !config.links.force_ring && !config.device.executor_on_host) {
    engine->direct_ = std::make_unique<DirectAllreduce>(*host, config, engine->stats_);
    for (int r = 0; r < engine->topo_.size; ++r) engine->world_.push_back(r);
  }
  engine->life_.started();
  engine->thread_ = std::thread([d = engine->driver_.get()] { d->loop(); });
  *out = std::move(engine);
  return Status::OK();
}

Engine::~Engine() {
  Status ignored = shutdown();
  (void)ignored;
}

Status Engine::wait(Handle& handle) { return driver_->wait(handle); }

Status Engine::runDirect(const TensorEntry& e, bool* done) {
  *done = false;
  const Request& r = e.request;
  // Which calls take a step at all depends only on the call, never on this rank's state, so
  // every rank takes the same steps; this rank's state only decides whether it can agree.
  const bool shaped = (r.op == OpType::kAllreduce && r.device < 0) || r.op == OpType::kBarrier;
  if (!direct_ || !shaped || !life_.running()) return Status::OK();
  // The global set's ranks are fixed: validated against them without validate()'s set lookup.
  // With top-k on, float tensors may be compressed (the threshold is the autotuner's to move):
  // the engine decides.
  const bool ready = r.process_set_id == 0 && r.reduce_op != ReduceOp::kAdasum && r.error.empty() &&
                     !(config_.topk.enabled && isFloatType(r.dtype)) && !timeline_.active() &&
                     validateRequest(r, {topo_.rank, &world_, config_.dynamic_process_sets}).ok() &&
                     !queue_.inFlight(r.process_set_id, r.name);
  return direct_->run(e, ready, done);
}

Status Engine::topkResiduals(std::map<std::string, std::vector<float>>* out) {
  return driver_->executors().topkResiduals(out);
}

Status Engine::setTopkResidual(const std::string& name, const float* data, size_t count) {
  return driver_->executors().setTopkResidual(name, data, count);
}

TopkStore& Engine::topkStore() { return driver_->executors().topkStore(); }

const Tuning& Engine::tuning() const { return driver_->tuning(); }

void Engine::nudgeFusion() { driver_->nudgeFusion(); }

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
  LIGHTCC_RETURN_IF_ERROR(sets_.checkMember(r.process_set_id, topo_.rank));
  // Sets are only ever added or erased, never changed under their id: a copy stays true.
  const std::vector<int> ranks = sets_.members(r.process_set_id);
  return validateRequest(r, {topo_.rank, &ranks, config_.dynamic_process_sets});
}

Status Engine::enqueue(std::vector<TensorEntry> entries, bool wake) {
  if (!life_.running()) {
    const Status why = life_.finalStatus();
    return why.ok() ? Status::PreconditionFailed("lightcc has been shut down; call init() first") : why;
  }
  for (auto& e : entries) e.request.rank = topo_.rank;
  for (auto& e : entries) {
    Status st = validate(e);
    if (st.ok() && e.request.op == OpType::kAlltoall && e.request.aux.empty() && !e.request.shape.empty()) {
      // Even splits: fill them in so the engine has one code path.
      const int64_t n = static_cast<int64_t>(sets_.members(e.request.process_set_id).size());
      e.request.aux.assign(static_cast<size_t>(n), e.request.shape[0] / n);
    }
    if (!st.ok()) {
      withdraw(std::move(entries), st);
      return st;
    }
  }
  // With streams callers never drive (wait() sleeps on the handle), so their work is the engine
  // thread's to take even when the caller said it would wait at once.
  return queue_.push(std::move(entries), wake || driver_->executors().hasStreams());
}

void Engine::withdraw(std::vector<TensorEntry> entries, const Status& why) {
  if (topo_.size == 1) return;
  for (auto& e : entries) {
    // Only ranks in the set take part in its negotiation; outside it there is nobody to tell.
    if (!sets_.checkMember(e.request.process_set_id, topo_.rank).ok()) return;
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

void Engine::abort(const Status& why) { driver_->requestAbort(why); }

Status Engine::shutdown() {
  if (thread_.joinable()) {
    // Peers' direct steps stop waiting for this rank and go to the engine, which says why.
    if (const shm::HostGroup* host = driver_->hostGroup()) host->setDirectAway(true);
    life_.requestStop();
    driver_->poke();
    thread_.join();
  }
  timeline_.stop();
  life_.ended(Status::OK());
  return Status::OK();
}


}  // namespace lightcc
