// Engine cycle: negotiate a plan, schedule fusion over it, dispatch it, and keep the counters.
#include <algorithm>

#include "common/logging.h"
#include "engine/engine.h"

namespace lightcc {
namespace {
// A rank that shuts down keeps serving cycles until every rank has asked too, but for at most
// this long; then everyone stops and pending work fails.
constexpr double kShutdownGraceSeconds = 5.0;

uint64_t nanos(std::chrono::steady_clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}
}  // namespace

Status Engine::runCycle(bool* stop) {
  const auto cycle_start = std::chrono::steady_clock::now();
  timeline_.cycleStart();
  Negotiator::Votes votes;
  votes.asked_shutdown = shutdown_requested_.load();
  if (votes.asked_shutdown && !shutdown_seen_) {
    shutdown_seen_ = true;
    shutdown_asked_at_ = cycle_start;
  }
  votes.force_shutdown = votes.asked_shutdown &&
                         std::chrono::duration<double>(cycle_start - shutdown_asked_at_).count() > kShutdownGraceSeconds;
  votes.want_flush = fusionWantsFlush();
  votes.device_ready = deviceReady();
  voted_device_ready_ = votes.device_ready;
  if (config_.autotune) voteTune(&votes);
  Negotiator::Plan& plan = plan_;
  LIGHTCC_RETURN_IF_ERROR(negotiator_->negotiate(votes, &plan));
  if (plan.stop) {
    *stop = true;
    return Status::OK();
  }
  shutdown_pending_ = plan.shutdown_pending;
  // Work that arrived while we negotiated comes from a producer running ahead of us (a backward
  // pass): then HOROVOD_CYCLE_TIME lets more of it gather. Work queued in reaction to the
  // completions below is a caller waiting on us, and must not wait for a tick.
  // An empty cycle (a peer woke us before we had the op) is not a burst: never delay after it.
  busy_ = queue_.hasWork() && !plan.responses.empty();
  const auto agreed = std::chrono::steady_clock::now();
  std::vector<ResponsePtr> batches;
  bool scheduled = false;
  if (config_.autotune) LIGHTCC_RETURN_IF_ERROR(applyTune(plan, &batches, &scheduled));
  if (!scheduled) batches = fusion_->schedule(plan.responses, plan.flush, plan.device_ready);
  fusion_holding_ = fusion_->holding();
  stats_.fusion_held.store(fusion_->heldCount(), std::memory_order_relaxed);
  stats_.fusion_flushes.store(fusion_->flushes(), std::memory_order_relaxed);
  for (const ResponsePtr& r : batches) LIGHTCC_RETURN_IF_ERROR(execute(r));
  const auto executed = std::chrono::steady_clock::now();
  stats_.cycles.fetch_add(1, std::memory_order_relaxed);
  if (plan.slow) stats_.slow_cycles.fetch_add(1, std::memory_order_relaxed);
  stats_.negotiate_ns.fetch_add(nanos(agreed - cycle_start), std::memory_order_relaxed);
  stats_.execute_ns.fetch_add(nanos(executed - agreed), std::memory_order_relaxed);
  stats_.cached_responses.fetch_add(plan.cached, std::memory_order_relaxed);
  stats_.coordinated_responses.fetch_add(plan.responses.size() - plan.cached, std::memory_order_relaxed);
  stats_.fused_batches.fetch_add(batches.size(), std::memory_order_relaxed);
  if (autotuner_) observeTune(plan, agreed);
  last_cycle_end_ = std::chrono::steady_clock::now();
  return negotiator_->finishCycle();
}

}  // namespace lightcc
