// Tuning: the settings snapshot — set-up from the config and cost model, autotune's votes and new generations.
#include "engine/tuning.h"

#include <algorithm>

#include "common/logging.h"

namespace lightcc {

Status Tuning::probe(const SetComm& world, const std::vector<std::string>& hosts, const Topology& topo,
                     int two_d_group) {
  const bool cost = config_.fusion.strategy == FusionStrategy::kCost;
  // The automatic 2D choice needs the fits too; every rank sees the same groups, so all probe or none.
  const bool auto_two_d = config_.two_d == TwoDMode::kAuto && two_d_group > 0;
  if (cost || auto_two_d) {
    LIGHTCC_RETURN_IF_ERROR(probeCostModel(world, hosts, false, cost && config_.topk.enabled,
                                           config_.topk.density, &cost_model_)
                                .withContext(cost ? "LIGHT_FUSION_STRATEGY=cost: probing the links"
                                                  : "choosing the 2D allreduce: probing the links"));
    cost_model_.rd_max_bytes = config_.links.rd_allreduce_bytes;
  }
  two_d_ = chooseTwoD(config_, topo, two_d_group, cost_model_);
  // Buckets are large: the model prices them with 2D wherever 2D is on.
  cost_model_.hierarchical = two_d_.on();
  if (world.me == 0) {
    LIGHTCC_LOG(kInfo) << "2D allreduce " << (two_d_.on() ? "on" : "off") << " (LIGHT_2D_ALLREDUCE="
                       << twoDModeName(config_.two_d) << "): " << two_d_.reason
                       << (auto_two_d ? "; " + cost_model_.describe() : std::string());
  }
  if (!cost) return Status::OK();
  if (config_.topk.enabled) topk_threshold_ = cost_model_.topkThresholdBytes(config_.topk.density);
  const int64_t bucket = cost_model_.bucketBytes(config_.fusion.threshold_bytes);
  LIGHTCC_LOG(kInfo) << "cost model: " << cost_model_.describe() << "; buckets "
                     << cost_model_.firstBucketBytes(bucket) << " then " << bucket << " bytes"
                     << (config_.topk.enabled ? "; top-k from " + std::to_string(topk_threshold_) + " bytes"
                                                : std::string());
  return Status::OK();
}

FusionScheduler::Options Tuning::fusionOptionsFor(const TuneParams& p) const {
  FusionScheduler::Options o;
  o.strategy = p.strategy;
  o.threshold = p.fusion_threshold;
  o.pace_device = config_.device.inflight > 0;
  if (p.strategy == FusionStrategy::kCost) {
    o.bucket = cost_model_.bucketBytes(p.fusion_threshold);
    o.first_bucket = cost_model_.firstBucketBytes(o.bucket);
  } else {
    o.bucket = p.fusion_threshold;
    o.first_bucket = std::min(config_.fusion.first_bucket_bytes, o.bucket);
  }
  return o;
}

Status Tuning::start(int rank, int streams) {
  auto s = std::make_shared<Settings>();
  TuneParams& p = s->params;
  p.fusion_threshold = config_.fusion.threshold_bytes;
  p.cycle_time_ms = config_.fusion.cycle_time_ms;
  p.strategy = config_.fusion.strategy;
  p.streams = streams;
  p.two_d = two_d_.on();
  p.topk_threshold = topk_threshold_;
  s->fusion = fusionOptionsFor(p);
  // Where autotune switches on a 2D the model never chose, every size takes it.
  s->two_d_from_bytes = two_d_.from_bytes == kTwoDNever ? 0 : two_d_.from_bytes;
  install(s);
  if (!config_.autotune.enabled || rank != 0) return Status::OK();
  TuneSpace space;
  space.two_d = two_d_.group > 0;
  space.max_streams = streams;
  space.cost = config_.fusion.strategy == FusionStrategy::kCost;
  space.topk = config_.topk.enabled;
  LIGHTCC_RETURN_IF_ERROR(Autotuner::create(config_, space, p, &autotuner_));
  LIGHTCC_LOG(kInfo) << "autotune: starting from " << p.describe() << "; 2D " << (space.two_d ? "switchable" : "fixed")
                     << ", up to " << space.max_streams << " streams";
  return Status::OK();
}

SettingsPtr Tuning::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shared_;
}

void Tuning::install(SettingsPtr settings) {
  live_ = settings;
  std::lock_guard<std::mutex> lock(mu_);
  shared_ = std::move(settings);
}

void Tuning::vote(uint64_t* words) const {
  if (autotuner_) encodeTune(autotuner_->generation(), autotuner_->current(), autotuner_->frozen(), words);
}

Status Tuning::next(const uint64_t* words, uint64_t cycle, int rank, int max_streams, SettingsPtr* out) const {
  out->reset();
  TuneParams p;
  bool frozen = false;
  const uint64_t generation = decodeTune(words, &p, &frozen);
  if (generation == live_->generation) return Status::OK();
  if (p.streams < 1 || p.streams > max_streams || p.fusion_threshold < 0 || p.topk_threshold < 0 ||
      !isValidFusionStrategy(static_cast<int>(p.strategy))) {
    return Status::Internal("autotune: rank " + std::to_string(rank) + " received invalid parameters (" +
                            p.describe() + ") in generation " + std::to_string(generation));
  }
  auto s = std::make_shared<Settings>(*live_);
  s->params = p;
  s->fusion = fusionOptionsFor(p);
  s->generation = generation;
  s->applied_cycle = cycle;
  s->frozen = frozen;
  s->history.emplace_back(cycle, p);
  LIGHTCC_LOG(kDebug) << "autotune: generation " << generation << " at cycle " << cycle << ": " << p.describe();
  *out = std::move(s);
  return Status::OK();
}

void Tuning::observe(const std::vector<ResponsePtr>& agreed, uint64_t cycle, std::chrono::steady_clock::time_point now) {
  if (autotuner_) autotuner_->observe(agreed, cycle, now);
}

}  // namespace lightcc
