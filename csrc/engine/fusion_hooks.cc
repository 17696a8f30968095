// Driver's fusion hooks: the scheduler for the settings in force, the flush vote, GPU pacing, the waiter nudge.
#include "common/logging.h"
#include "engine/driver.h"

namespace lightcc {

void Driver::makeFusion() {
  // Tensors top-k compresses are never held and fuse only with each other (device ones run one
  // by one); the threshold is the one in force when the scheduler looks (autotune moves it).
  fusion_ = std::make_unique<FusionScheduler>(tuning_.live().fusion, [this](const Response& r) {
    return topkFusionClass(r, s_.config, tuning_.live().params.topk_threshold);
  });
}

bool Driver::fusionWantsFlush() const {
  if (!fusion_ || !fusion_->holding()) return false;
  if (fusion_->idleSeconds() * 1e3 >= s_.config.fusion_flush_ms) return true;
  // A caller blocked on a held tensor would otherwise wait for the rest of its bucket, which may
  // never come (an unused parameter, a step with other tensors, a sequential caller).
  // Polled while the engine waits for work, so it does not log; the flush itself is logged.
  return fusion_->anyHeld(
      [this](const FusionScheduler::Key& key) { return negotiator_->waitedOn(key.first, key.second); });
}

bool Driver::pacingWantsCycle() {
  // Edge-triggered: a rank whose GPU was ready at the last vote already said so; the rank that
  // was busy asks for the next cycle when it is ready, so held tensors never wait on a cycle
  // that nobody starts, and no rank spins cycles while a peer's GPU is still busy.
  return fusion_ && fusion_->pacedCount() > 0 && !voted_device_ready_ && pool_.deviceReady();
}

void Driver::nudgeFusion() {
  if (fusion_holding_.load() && host_) host_->wakeSelf();
}

}  // namespace lightcc
