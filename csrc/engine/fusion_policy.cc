// FusionPolicy: the scheduler for the settings in force, the flush vote, GPU pacing, the waiter nudge.
#include "engine/fusion_policy.h"

namespace lightcc {

void FusionPolicy::start(const Negotiator& negotiator, shm::HostGroup* host) {
  negotiator_ = &negotiator;
  host_ = host;
  rebuild();
}

void FusionPolicy::rebuild() {
  // Tensors top-k compresses are never held and fuse only with each other (device ones run one
  // by one); the threshold is the one in force when the scheduler looks (autotune moves it).
  scheduler_ = std::make_unique<FusionScheduler>(tuning_.live().fusion, [this](const Response& r) {
    return topkFusionClass(r, config_, tuning_.live().params.topk_threshold);
  });
  publish();
}

std::vector<ResponsePtr> FusionPolicy::schedule(const Negotiator::Plan& plan, bool flush) {
  std::vector<ResponsePtr> batches = scheduler_->schedule(plan.responses, flush, plan.device_ready);
  publish();
  return batches;
}

void FusionPolicy::publish() {
  holding_ = scheduler_->holding();
  stats_.fusion.fusion_held.store(scheduler_->heldCount(), std::memory_order_relaxed);
  stats_.fusion.fusion_flushes.store(scheduler_->flushes(), std::memory_order_relaxed);
  stats_.fusion.fusion_buckets.store(scheduler_->plannedBuckets(), std::memory_order_relaxed);
}

bool FusionPolicy::wantsFlush() const {
  if (!scheduler_ || !scheduler_->holding()) return false;
  if (scheduler_->idleSeconds() * 1e3 >= config_.fusion.flush_ms) return true;
  // A caller blocked on a held tensor would otherwise wait for the rest of its bucket, which may
  // never come (an unused parameter, a step with other tensors, a sequential caller).
  // Polled while the engine waits for work, so it does not log; the flush itself is logged.
  return scheduler_->anyHeld(
      [this](const FusionScheduler::Key& key) { return negotiator_->waitedOn(key.first, key.second); });
}

bool FusionPolicy::wantsCycle() {
  // Edge-triggered: a rank whose GPU was ready at the last vote already said so; the rank that
  // was busy asks for the next cycle when it is ready, so held tensors never wait on a cycle
  // that nobody starts, and no rank spins cycles while a peer's GPU is still busy.
  return paced() && !voted_device_ready_ && pool_.deviceReady();
}

void FusionPolicy::nudge() {
  if (holding_.load() && host_) host_->wakeSelf();
}

}  // namespace lightcc
