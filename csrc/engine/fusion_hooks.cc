// Engine's fusion hooks: set-up at init (cost probe, bucket sizes), the flush vote, the waiter nudge.
#include <algorithm>

#include "common/logging.h"
#include "engine/engine.h"

namespace lightcc {

Status Engine::setUpFusion() {
  topk_threshold_bytes_ = config_.topk_threshold_bytes;
  FusionScheduler::Options o;
  o.strategy = config_.fusion_strategy;
  o.threshold = config_.fusion_threshold_bytes;
  o.bucket = config_.fusion_threshold_bytes;
  o.first_bucket = std::min(config_.fusion_first_bucket_bytes, o.bucket);
  o.pace_device = config_.device_inflight > 0;
  if (config_.fusion_strategy == FusionStrategy::kCost) {
    LIGHTCC_RETURN_IF_ERROR(probeCostModel(main_->comms.at(0), mesh_->hosts(),
                                           config_.hierarchical_allreduce && main_->hier.count(0) > 0, config_.topk_allreduce,
                                           config_.topk_density, &cost_model_)
                                .withContext("LIGHT_FUSION_STRATEGY=cost: probing the links"));
    o.bucket = cost_model_.bucketBytes(config_.fusion_threshold_bytes);
    o.first_bucket = cost_model_.firstBucketBytes(o.bucket);
    if (config_.topk_allreduce) topk_threshold_bytes_.store(cost_model_.topkThresholdBytes(config_.topk_density));
    LIGHTCC_LOG(kInfo) << "cost model: " << cost_model_.describe() << "; buckets " << o.first_bucket << " then "
                       << o.bucket << " bytes"
                       << (config_.topk_allreduce ? "; top-k from " + std::to_string(topk_threshold_bytes_.load()) + " bytes"
                                                  : std::string());
  }
  fusion_options_ = o;
  fusion_ = std::make_unique<FusionScheduler>(
      o, [this](const Response& r) { return topkEligible(r, config_, topk_threshold_bytes_.load()); });
  return Status::OK();
}

bool Engine::fusionWantsFlush() const {
  if (!fusion_ || !fusion_->holding()) return false;
  if (fusion_->idleSeconds() * 1e3 >= config_.fusion_flush_ms) return true;
  // A caller blocked on a held tensor would otherwise wait for the rest of its bucket, which may
  // never come (an unused parameter, a step with other tensors, a sequential caller).
  // Polled while the engine waits for work, so it does not log; the flush itself is logged.
  return fusion_->anyHeld(
      [this](const FusionScheduler::Key& key) { return negotiator_->waitedOn(key.first, key.second); });
}

bool Engine::deviceReady() {
  return config_.device_inflight <= 0 ||
         device_inflight_.running() < static_cast<size_t>(config_.device_inflight);
}

bool Engine::pacingWantsCycle() {
  // Edge-triggered: a rank whose GPU was ready at the last vote already said so; the rank that
  // was busy asks for the next cycle when it is ready, so held tensors never wait on a cycle
  // that nobody starts, and no rank spins cycles while a peer's GPU is still busy.
  return fusion_ && fusion_->pacedCount() > 0 && !voted_device_ready_ && deviceReady();
}

void Engine::nudgeFusion() {
  if (fusion_holding_.load() && host_) host_->wakeSelf();
}

}  // namespace lightcc
