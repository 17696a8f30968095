// Driver cycle: vote, negotiate a plan, schedule fusion over it, dispatch it, and keep the counters.
#include <algorithm>

#include "common/logging.h"
#include "engine/driver.h"

namespace lightcc {
namespace {
// A rank that shuts down keeps serving cycles until every rank has asked too, but for at most
// this long; then everyone stops and pending work fails.
constexpr double kShutdownGraceSeconds = 5.0;

uint64_t nanos(std::chrono::steady_clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}
}  // namespace

Negotiator::Votes Driver::vote(std::chrono::steady_clock::time_point now) {
  Negotiator::Votes votes;
  votes.asked_shutdown = s_.life.stopAsked();
  votes.force_shutdown = votes.asked_shutdown && s_.life.voteStop(now) > kShutdownGraceSeconds;
  votes.want_flush = fusion_.wantsFlush();
  votes.device_ready = pool_.deviceReady();
  fusion_.voted(votes.device_ready);
  if (s_.config.autotune) tuning_.vote(votes.tune.data());
  return votes;
}

Status Driver::runCycle(bool* stop) {
  const auto cycle_start = std::chrono::steady_clock::now();
  s_.timeline.cycleStart();
  Negotiator::Plan& plan = plan_;
  LIGHTCC_RETURN_IF_ERROR(negotiator_->negotiate(vote(cycle_start), &plan));
  if (plan.stop) {
    *stop = true;
    return Status::OK();
  }
  s_.life.peersStopping(plan.shutdown_pending);
  // Work that arrived while we negotiated comes from a producer running ahead of us (a backward
  // pass): then HOROVOD_CYCLE_TIME lets more of it gather. Work queued in reaction to the
  // completions below is a caller waiting on us, and must not wait for a tick.
  // An empty cycle (a peer woke us before we had the op) is not a burst: never delay after it.
  busy_ = s_.queue.hasWork() && !plan.responses.empty();
  const auto agreed = std::chrono::steady_clock::now();
  std::vector<ResponsePtr> batches;
  bool scheduled = false;
  if (s_.config.autotune) LIGHTCC_RETURN_IF_ERROR(tune_.apply(plan, negotiator_->cycle(), &batches, &scheduled));
  if (!scheduled) batches = fusion_.schedule(plan, plan.flush);
  EngineStats& stats = s_.stats;
  for (const ResponsePtr& r : batches) LIGHTCC_RETURN_IF_ERROR(dispatch_->execute(r));
  const auto executed = std::chrono::steady_clock::now();
  stats.cycles.fetch_add(1, std::memory_order_relaxed);
  if (plan.slow) stats.slow_cycles.fetch_add(1, std::memory_order_relaxed);
  stats.negotiate_ns.fetch_add(nanos(agreed - cycle_start), std::memory_order_relaxed);
  stats.execute_ns.fetch_add(nanos(executed - agreed), std::memory_order_relaxed);
  stats.cached_responses.fetch_add(plan.cached, std::memory_order_relaxed);
  stats.coordinated_responses.fetch_add(plan.responses.size() - plan.cached, std::memory_order_relaxed);
  stats.fused_batches.fetch_add(batches.size(), std::memory_order_relaxed);
  tuning_.observe(plan.responses, negotiator_->cycle(), agreed);
  last_cycle_end_ = std::chrono::steady_clock::now();
  return negotiator_->finishCycle();
}

}  // namespace lightcc
