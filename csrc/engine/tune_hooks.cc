// Engine's autotune hooks: the live settings, rank 0's vote, applying an agreed generation.
//
// Which parameters move how (docs/tuning.md): fusion threshold, fusion strategy, cycle time and
// the top-k threshold switch live; so do 2D on/off (autotune builds the 2D communicators at init
// wherever LIGHT_2D_ALLREDUCE would) and the number of active streams, up to the
// LIGHT_NUM_STREAMS workers built at init. The cost strategy is searched only when the job
// started with it (its model is probed at init, a collective of its own).
#include <algorithm>

#include "common/logging.h"
#include "engine/engine.h"

namespace lightcc {

Status Engine::setUpAutotune() {
  TuneParams p;
  p.fusion_threshold = fusion_options_.threshold;
  p.cycle_time_ms = config_.cycle_time_ms;
  p.strategy = fusion_options_.strategy;
  p.streams = streams_ ? streams_->size() : 1;
  p.two_d = config_.hierarchical_allreduce;
  p.topk_threshold = topk_threshold_bytes_.load();
  cycle_time_ms_ = p.cycle_time_ms;
  active_streams_ = p.streams;
  two_d_ = p.two_d;
  {
    std::lock_guard<std::mutex> lock(tune_mu_);
    tune_state_.params = p;
    tune_state_.generation = 1;
  }
  if (!config_.autotune || topo_.rank != 0) return Status::OK();
  TuneSpace space;
  space.two_d = main_->hier.count(0) > 0;
  space.max_streams = streams_ ? streams_->size() : 1;
  space.cost = config_.fusion_strategy == FusionStrategy::kCost;
  space.topk = config_.topk_allreduce;
  LIGHTCC_RETURN_IF_ERROR(Autotuner::create(config_, space, p, &autotuner_));
  LIGHTCC_LOG(kInfo) << "autotune: starting from " << p.describe() << "; 2D " << (space.two_d ? "switchable" : "fixed")
                     << ", up to " << space.max_streams << " streams";
  return Status::OK();
}

void Engine::voteTune(Negotiator::Votes* votes) const {
  if (autotuner_) encodeTune(autotuner_->generation(), autotuner_->current(), autotuner_->frozen(), votes->tune.data());
}

Status Engine::applyTune(const Negotiator::Plan& plan, std::vector<ResponsePtr>* batches, bool* scheduled) {
  TuneParams p;
  bool frozen = false;
  const uint64_t generation = decodeTune(plan.tune.data(), &p, &frozen);
  {
    std::lock_guard<std::mutex> lock(tune_mu_);
    if (generation == tune_state_.generation) return Status::OK();
  }
  if (p.streams < 1 || p.streams > (streams_ ? streams_->size() : 1) || p.fusion_threshold < 0 ||
      p.topk_threshold < 0 || static_cast<int>(p.strategy) > static_cast<int>(FusionStrategy::kCost)) {
    return Status::Internal("autotune: rank " + std::to_string(topo_.rank) + " received invalid parameters (" +
                            p.describe() + ") in generation " + std::to_string(generation));
  }
  FusionScheduler::Options o = fusion_options_;
  o.strategy = p.strategy;
  o.threshold = p.fusion_threshold;
  if (p.strategy == FusionStrategy::kCost) {
    o.bucket = cost_model_.bucketBytes(p.fusion_threshold);
    o.first_bucket = cost_model_.firstBucketBytes(o.bucket);
  } else {
    o.bucket = p.fusion_threshold;
    o.first_bucket = std::min(config_.fusion_first_bucket_bytes, o.bucket);
  }
  const bool new_fusion = o.strategy != fusion_options_.strategy || o.threshold != fusion_options_.threshold ||
                      o.bucket != fusion_options_.bucket || o.first_bucket != fusion_options_.first_bucket;
  if (new_fusion) {
    // The old scheduler runs what it holds now, with this cycle's responses; the new one starts
    // empty. Every rank does this in the same cycle, so the batches still match.
    *batches = fusion_->schedule(plan.responses, true, plan.device_ready);
    *scheduled = true;
    fusion_ = std::make_unique<FusionScheduler>(
        o, [this](const Response& r) { return topkEligible(r, config_, topk_threshold_bytes_.load()); });
  }
  topk_threshold_bytes_.store(p.topk_threshold);
  cycle_time_ms_ = p.cycle_time_ms;
  active_streams_ = p.streams;
  two_d_ = p.two_d;
  std::lock_guard<std::mutex> lock(tune_mu_);
  fusion_options_ = o;
  tune_state_.params = p;
  tune_state_.generation = generation;
  tune_state_.applied_cycle = negotiator_->cycle();
  tune_state_.frozen = frozen;
  tune_state_.history.emplace_back(tune_state_.applied_cycle, p);
  LIGHTCC_LOG(kDebug) << "autotune: generation " << generation << " at cycle " << negotiator_->cycle() << ": "
                      << p.describe();
  return Status::OK();
}

void Engine::observeTune(const Negotiator::Plan& plan, std::chrono::steady_clock::time_point agreed) {
  autotuner_->observe(plan.responses, negotiator_->cycle(), agreed);
}

}  // namespace lightcc
