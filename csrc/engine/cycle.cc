// CycleRunner: vote, negotiate a plan, schedule fusion over it, dispatch it, and keep the counters.
#include <algorithm>

#include "common/logging.h"
#include "engine/cycle.h"

namespace lightcc {
namespace {
// A rank that shuts down keeps serving cycles until every rank has asked too, but for at most
// this long; then everyone stops and pending work fails.
constexpr double kShutdownGraceSeconds = 5.0;

uint64_t nanos(std::chrono::steady_clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}
}  // namespace

Negotiator::Votes CycleRunner::vote(std::chrono::steady_clock::time_point now) {
  Negotiator::Votes votes;
  votes.asked_shutdown = p_.life.stopAsked();
  votes.force_shutdown = votes.asked_shutdown && p_.life.voteStop(now) > kShutdownGraceSeconds;
  votes.want_flush = p_.fusion.wantsFlush();
  votes.device_ready = p_.pool.deviceReady();
  p_.fusion.voted(votes.device_ready);
  if (p_.config.autotune.enabled) p_.tuning.vote(votes.tune.data());
  return votes;
}

Status CycleRunner::run(bool* stop) {
  const auto cycle_start = std::chrono::steady_clock::now();
  p_.timeline.cycleStart();
  Negotiator::Plan& plan = plan_;
  LIGHTCC_RETURN_IF_ERROR(p_.negotiator.negotiate(vote(cycle_start), &plan));
  if (plan.stop) {
    *stop = true;
    return Status::OK();
  }
  p_.life.peersStopping(plan.shutdown_pending);
  // Work that arrived while we negotiated comes from a producer running ahead of us (a backward
  // pass): then HOROVOD_CYCLE_TIME lets more of it gather. Work queued in reaction to the
  // completions below is a caller waiting on us, and must not wait for a tick.
  // An empty cycle (a peer woke us before we had the op) is not a burst: never delay after it.
  busy_ = p_.queue.hasWork() && !plan.responses.empty();
  const auto agreed = std::chrono::steady_clock::now();
  std::vector<ResponsePtr> batches;
  bool scheduled = false;
  if (p_.config.autotune.enabled) {
    LIGHTCC_RETURN_IF_ERROR(p_.tune.apply(plan, p_.negotiator.cycle(), &batches, &scheduled));
  }
  if (!scheduled) batches = p_.fusion.schedule(plan, plan.flush);
  EngineStats& stats = p_.stats;
  for (const ResponsePtr& r : batches) LIGHTCC_RETURN_IF_ERROR(p_.dispatch.execute(r));
  const auto executed = std::chrono::steady_clock::now();
  stats.cycle.cycles.fetch_add(1, std::memory_order_relaxed);
  if (plan.slow) stats.cycle.slow_cycles.fetch_add(1, std::memory_order_relaxed);
  stats.cycle.negotiate_ns.fetch_add(nanos(agreed - cycle_start), std::memory_order_relaxed);
  stats.cycle.execute_ns.fetch_add(nanos(executed - agreed), std::memory_order_relaxed);
  stats.cycle.cached_responses.fetch_add(plan.cached, std::memory_order_relaxed);
  stats.cycle.coordinated_responses.fetch_add(plan.responses.size() - plan.cached, std::memory_order_relaxed);
  stats.cycle.fused_batches.fetch_add(batches.size(), std::memory_order_relaxed);
  p_.tuning.observe(plan.responses, p_.negotiator.cycle(), agreed);
  last_end_ = std::chrono::steady_clock::now();
  return p_.negotiator.finishCycle();
}

}  // namespace lightcc
