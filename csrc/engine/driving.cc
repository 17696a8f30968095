// Engine's side of Progress: what a cycle needs, sleeping for work, timers, ending, interrupts.
//
// Progress (progress.h) decides who drives; this file is what driving means for the engine:
// whether there is a cycle to run, how long to sleep without one, the timers (stall inspector,
// peer liveness, an abort request), and how the engine ends (every handle failed, host peers
// told when the end is an error).
#include <pthread.h>
#include <sched.h>

#include <algorithm>

#include "common/interrupt.h"
#include "common/logging.h"
#include "engine/engine.h"
#include "engine/streams.h"

namespace lightcc {
namespace {
double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
// How long a driving caller with nothing to do sleeps before it looks at the timers again; it
// runs them itself, since it may keep the engine for a long time.
constexpr double kCallerIdleUs = 20e3;
// How often peers' liveness is checked while waiting for work: often while something here waits
// on them, rarely when idle (a dead peer then fails the next operation soon enough).
constexpr double kLivenessPendingS = 0.25, kLivenessIdleS = 1.0;
// How often the engine looks at the GPU while tensors wait for it to drain (device_pacing.h).
constexpr double kPacingPollUs = 100;
}  // namespace

void Engine::requestAbort(const Status& why) {
  {
    std::lock_guard<std::mutex> lock(abort_mu_);
    if (abort_status_.ok()) abort_status_ = why;
  }
  abort_requested_.store(true, std::memory_order_release);
  if (streams_) streams_->abort(why);
  progress_.poke();
}

Status Engine::checkLiveness() {
  if (abort_requested_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(abort_mu_);
    return abort_status_;
  }
  const bool pending = negotiator_->anyWork();
  if (secondsSince(last_liveness_) < (pending ? kLivenessPendingS : kLivenessIdleS)) return Status::OK();
  last_liveness_ = std::chrono::steady_clock::now();
  return host_->checkPeersAlive();
}

bool Engine::workReady(bool background) {
  if (shutdown_requested_.load(std::memory_order_relaxed) && !shutdown_seen_) return true;
  // The background thread leaves a synchronous caller's entries to that caller: taking them
  // would turn every later op into a hand-off, since the caller then finds the engine busy.
  if (background ? queue_.hasUndrivenWork() : queue_.hasWork()) return true;
  if (streams_ && streams_->failed()) return true;
  if (fusionWantsFlush() || pacingWantsCycle()) return true;
  return negotiator_->incoming();
}

bool Engine::urgent() {
  return (shutdown_requested_.load(std::memory_order_relaxed) && !shutdown_seen_) ||
         abort_requested_.load(std::memory_order_acquire) || (streams_ && streams_->failed());
}

bool Engine::asyncWork() { return queue_.hasUndrivenWork(); }

Status Engine::timers(bool* want_cycle) {
  LIGHTCC_RETURN_IF_ERROR(checkLiveness());
  const bool winding_down = shutdown_pending_ || shutdown_seen_;
  if (secondsSince(last_maintenance_) < (winding_down ? 0.1 : 1.0)) return Status::OK();
  bool timer = false;
  last_maintenance_ = std::chrono::steady_clock::now();
  negotiator_->maintenance(last_maintenance_, &timer);
  *want_cycle = *want_cycle || timer || winding_down;
  return Status::OK();
}

double Engine::idleUs(bool background) {
  const bool holding = fusion_ && fusion_->holding();  // held bucket tensors: the flush timer
  // Tensors held for a busy GPU: its stream idles from the moment it drains until we look.
  if (fusion_ && fusion_->pacedCount() > 0) return kPacingPollUs;
  if (!background) return holding ? 1e3 : kCallerIdleUs;
  // With nothing pending the engine sleeps until woken (liveness still looks now and then); with
  // pending work it looks often; while some rank shuts down, every 100 ms so its grace can end.
  double us = negotiator_->anyWork() ? kLivenessPendingS * 1e6 : kLivenessIdleS * 1e6;
  if (shutdown_pending_ || shutdown_seen_) us = 100e3;
  return holding ? std::min(us, 1e3) : us;
}

Status Engine::sleep(const std::function<bool()>& ready, double max_us, bool spin) {
  return host_->waitUntil(ready, "work", false, max_us, spin);
}

bool Engine::workLeft() { return negotiator_->anyWork() || queue_.hasWork(); }

void Engine::wake() { host_->wakeSelf(); }

Status Engine::run(bool background, bool* stop) {
  // HOROVOD_CYCLE_TIME: while work keeps arriving, let more of it gather before negotiating.
  if (background && busy_ && cycle_time_ms_ > 0 && !negotiator_->incoming()) {
    auto due = last_cycle_end_ + std::chrono::microseconds(static_cast<int64_t>(cycle_time_ms_ * 1e3));
    double left_us = std::chrono::duration<double, std::micro>(due - std::chrono::steady_clock::now()).count();
    if (left_us > 0) {
      LIGHTCC_RETURN_IF_ERROR(host_->waitUntil(
          [&] { return shutdown_requested_.load() || negotiator_->incoming(); }, "cycle time", false, left_us));
    }
  }
  if (streams_ && streams_->failed()) return streams_->error();
  return runCycle(stop);
}

void Engine::end(const Status& why) {
  Status st = why;
  if (abort_requested_.load(std::memory_order_acquire)) {
    // Waits cut short by the abort report it vaguely; the reason it was asked for is the news.
    std::lock_guard<std::mutex> lock(abort_mu_);
    st = abort_status_;
  } else if (st.code() == StatusCode::kCancelled) {
    st = Status::Cancelled("rank " + std::to_string(topo_.rank) + " was " + st.message() + " (a signal)");
  }
  // Agreed batches still queued on streams run to completion on every rank (all stop in the same
  // cycle); after an error they are failed instead.
  if (streams_) {
    streams_->stop(st);
    if (st.ok() && streams_->failed()) st = streams_->error();
  }
  if (st.ok()) {
    st = Status::Aborted("lightcc was shut down before this operation completed");
  } else {
    LIGHTCC_LOG(kError) << st.message();
    final_status_ = st;
    // This process may live on (a caught KeyboardInterrupt): host peers must not wait for it.
    host_->markFailed(st.message());
    // NCCL calls already enqueued may wait forever for the failed peer: stop them.
    if (executor_) executor_->abort();
    for (Executor* e : stream_executors_) e->abort();
  }
  running_ = false;
  negotiator_->failAll(st);
  timeline_.stop();
}

void Engine::loop() {
  if (!config_.thread_affinity.empty()) {
    int core = config_.thread_affinity[topo_.local_rank % config_.thread_affinity.size()];
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
      LIGHTCC_LOG(kWarning) << "HOROVOD_THREAD_AFFINITY: cannot pin the engine thread to core " << core;
    }
  }
  progress_.runBackground();
}

Status Engine::interrupted(Handle& handle) {
  const Status why = Status::Cancelled("rank " + std::to_string(topo_.rank) +
                                       " was interrupted (a signal) while waiting for an operation");
  requestAbort(why);
  // The engine may still be reading or writing this op's buffers; they belong to the caller
  // again only once the handle completes, which the abort makes happen within a wait's poll.
  Status ignored = handle.wait();
  (void)ignored;
  return why;
}

Status Engine::wait(Handle& handle) {
  if (streams_) {
    // With streams the work runs on their workers and completes handles there; a driver would
    // only negotiate, which the engine thread already does without a hand-off on the data path.
    while (!handle.waitFor(kInterruptPollMs * 1e3)) {
      if (interruptRequested()) return interrupted(handle);
    }
    return handle.wait();
  }
  Status st = progress_.wait(handle);
  if (st.code() == StatusCode::kCancelled && !handle.done()) return interrupted(handle);
  return handle.wait();
}

}  // namespace lightcc
