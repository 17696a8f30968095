// Progress: who runs the engine — its background thread, or a caller waiting on a handle.
//
// DESIGN. All state below the queue is touched only with progress_mu_ held. A caller in wait()
// that finds the lock free runs the cycles itself until its handle completes (the MPI model:
// the waiting thread makes progress), so a synchronous op needs no hand-off to the engine thread
// and back, each of which costs a futex wake-up — tens of microseconds on a busy core. While a
// caller drives, the background thread waits on driver_cv_ rather than on the doorbell, so peers'
// messages wake only the thread that will read them and nobody spins beside the driver. The
// background thread still serves everything nobody waits for: async work, peers' cycles for
// process sets this rank has no waiter in, the stall inspector, and shutdown.
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
// How long a driver with nothing to do sleeps before it looks at the timers (stall inspector,
// shutdown grace) again; it runs them itself, since it may keep the engine for a long time.
constexpr double kDriverIdleUs = 20e3;
// How long the background thread stays off the doorbell after a caller stopped driving.
constexpr double kDriverGraceUs = 1000;
// How long a caller polls for the background thread to hand the lock over before it sleeps.
constexpr int64_t kHandOverUs = 200;
// How often peers' liveness is checked while waiting for work: often while something here waits
// on them, rarely when idle (a dead peer then fails the next operation soon enough).
constexpr double kLivenessPendingS = 0.25, kLivenessIdleS = 1.0;
}  // namespace

void Engine::requestAbort(const Status& why) {
  {
    std::lock_guard<std::mutex> lock(abort_mu_);
    if (abort_status_.ok()) abort_status_ = why;
  }
  abort_requested_.store(true, std::memory_order_release);
  if (streams_) streams_->abort(why);
  {
    std::lock_guard<std::mutex> d(driver_mu_);
  }
  driver_cv_.notify_all();
  host_->wakeSelf();
}

Status Engine::checkLiveness() {
  if (abort_requested_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(abort_mu_);
    return abort_status_;
  }
  const bool pending = tensors_.anyPending() || (coordinator_ && !coordinator_->empty());
  if (secondsSince(last_liveness_) < (pending ? kLivenessPendingS : kLivenessIdleS)) return Status::OK();
  last_liveness_ = std::chrono::steady_clock::now();
  return host_->checkPeersAlive();
}

bool Engine::workReady(bool engine_thread) {
  if (shutdown_requested_.load(std::memory_order_relaxed) && !shutdown_seen_) return true;
  // The engine thread leaves a synchronous caller's entries to that caller (see wait()): taking
  // them would turn every later op into a hand-off, since the caller then finds the lock busy.
  if (engine_thread ? queue_.hasUndrivenWork() : queue_.hasWork()) return true;
  if (streams_ && streams_->failed()) return true;
  if (fusionWantsFlush()) return true;
  return incomingCycle();
}

bool Engine::maintenanceDue(bool* want_cycle) {
  const bool winding_down = shutdown_pending_ || shutdown_seen_;
  if (secondsSince(last_maintenance_) < (winding_down ? 0.1 : 1.0)) return false;
  bool timer = false;
  maintenance(&timer);
  *want_cycle = timer || winding_down;
  return true;
}

void Engine::endLoop(Status st) {
  if (abort_requested_.load(std::memory_order_acquire)) {
    // Waits cut short by the abort report it vaguely; the reason it was asked for is the news.
    std::lock_guard<std::mutex> lock(abort_mu_);
    st = abort_status_;
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
  }
  running_ = false;
  failEverything(st);
  timeline_.stop();
  stopped_ = true;
  driver_cv_.notify_all();
  host_->wakeSelf();
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
  std::unique_lock<std::mutex> lock(progress_mu_);
  last_maintenance_ = last_liveness_ = std::chrono::steady_clock::now();
  while (!stopped_) {
    if (Status live = checkLiveness(); !live.ok()) {
      endLoop(live);
      break;
    }
    if (want_drive_.load(std::memory_order_acquire) > 0) {
      // A caller waits for the lock to drive: hand the engine over between cycles. Otherwise,
      // once this thread had taken a cycle (a peer's message came first), it would keep the
      // lock for every later one and each op would pay a hand-off to its caller.
      lock.unlock();
      waitOutDrivers();
      lock.lock();
      continue;
    }
    bool run = workReady(/*engine_thread=*/true);
    if (!run) maintenanceDue(&run);
    if (!run) {
      // With nothing pending the engine sleeps until woken; otherwise it wakes each second for
      // the stall inspector; while some rank shuts down, every 100 ms so its grace can end the job.
      double wait_us = (!tensors_.anyPending() && (!coordinator_ || coordinator_->empty())) ? kLivenessIdleS * 1e6
                                                                                            : kLivenessPendingS * 1e6;
      if (shutdown_pending_ || shutdown_seen_) wait_us = 100e3;
      // Held bucket tensors: look again soon for a blocked caller or the flush timer.
      if (fusion_ && fusion_->holding()) wait_us = std::min(wait_us, 1e3);
      lock.unlock();
      auto hint = [&] {
        if (stopped_ || driving_.load(std::memory_order_acquire) || want_drive_.load() > 0) return true;
        if (abort_requested_.load(std::memory_order_acquire)) return true;
        if ((shutdown_requested_.load(std::memory_order_relaxed) && !shutdown_seen_) || queue_.hasUndrivenWork()) return true;
        if (streams_ && streams_->failed()) return true;
        std::unique_lock<std::mutex> probe(progress_mu_, std::try_to_lock);
        return probe.owns_lock() && (fusionWantsFlush() || incomingCycle());
      };
      Status st = host_->waitUntil(hint, "work", false, wait_us, /*spin=*/false);
      if (driving_.load(std::memory_order_acquire) || want_drive_.load() > 0) waitOutDrivers();
      lock.lock();
      if (stopped_) break;
      if (!st.ok()) {
        endLoop(st);
        break;
      }
      continue;
    }
    // HOROVOD_CYCLE_TIME: while work keeps arriving, let more of it gather before negotiating.
    if (busy_ && config_.cycle_time_ms > 0 && !incomingCycle()) {
      auto due = last_cycle_end_ + std::chrono::microseconds(static_cast<int64_t>(config_.cycle_time_ms * 1e3));
      double left_us = std::chrono::duration<double, std::micro>(due - std::chrono::steady_clock::now()).count();
      if (left_us > 0) {
        Status st = host_->waitUntil([&] { return shutdown_requested_.load() || incomingCycle(); },
                                     "cycle time", false, left_us);
        if (!st.ok()) {
          endLoop(st);
          break;
        }
      }
    }
    if (streams_ && streams_->failed()) {
      endLoop(streams_->error());
      break;
    }
    bool stop = false;
    Status st = runCycle(&stop);
    if (!st.ok() || stop) {
      endLoop(st);
      break;
    }
  }
}

void Engine::waitOutDrivers() {
  // A caller that just drove usually drives again soon (a loop of synchronous ops). Staying off
  // the doorbell meanwhile means peers' messages wake only that caller, not this thread too. The
  // grace is timed from the last drive's end, so a driver does not have to wake this thread
  // after every operation (a futex wake-up and a context switch per op on a busy core); it
  // notifies only when it leaves work behind.
  const auto grace = std::chrono::microseconds(static_cast<int64_t>(kDriverGraceUs));
  std::unique_lock<std::mutex> d(driver_mu_);
  while (!stopped_) {
    if (shutdown_requested_.load() || abort_requested_.load()) return;
    // A caller about to drive runs queued async work too; returning for it would only make this
    // thread take the lock back from under that caller, again and again.
    const bool wanted = want_drive_.load() > 0;
    if (!wanted && (handoff_.exchange(false) || queue_.hasUndrivenWork())) return;
    const auto now = std::chrono::steady_clock::now();
    const bool driving = driving_.load(std::memory_order_acquire) || wanted;
    if (!driving && now >= last_drive_end_ + grace) return;
    driver_cv_.wait_until(d, driving ? now + grace : last_drive_end_ + grace);
  }
}

Status Engine::driveUntil(Handle& handle) {
  while (!handle.done() && !stopped_) {
    bool run = workReady();
    if (!run) maintenanceDue(&run);
    if (!run) {
      LIGHTCC_RETURN_IF_ERROR(checkLiveness());
      // Peers answer within microseconds when they are driving too, so spin first (waitUntil's
      // policy); the lock stays ours because nobody else could use it better.
      const double idle_us = fusion_ && fusion_->holding() ? 1e3 : kDriverIdleUs;  // the flush timer
      LIGHTCC_RETURN_IF_ERROR(host_->waitUntil([&] { return workReady(); }, "work", false, idle_us));
      continue;
    }
    bool stop = false;
    stats_.caller_cycles.fetch_add(1, std::memory_order_relaxed);
    Status st = runCycle(&stop);
    if (!st.ok()) return st;
    if (stop) {
      endLoop(Status::OK());
      return Status::OK();
    }
  }
  return Status::OK();
}

Status Engine::interrupted(Handle& handle) {
  const Status why = Status::Cancelled("rank " + std::to_string(topo_.rank) +
                                       " was interrupted (a signal) while waiting for an operation");
  requestAbort(why);
  // The engine may still be reading or writing this op's buffers; they belong to the caller
  // again only once the handle completes, which the abort makes happen within a wait's poll.
  handle.wait();
  return why;
}

Status Engine::wait(Handle& handle) {
  // With streams the work runs on their workers and completes handles there; a driver would only
  // negotiate, which the engine thread already does without a hand-off on the data path.
  if (streams_) return handle.wait();
  while (!handle.done()) {
    std::unique_lock<std::mutex> lock(progress_mu_, std::try_to_lock);
    if (!lock.owns_lock() && !stopped_) {
      // The background thread is in a cycle; it hands the lock over when that ends (it checks
      // want_drive_ between cycles), which takes microseconds, so poll for it yielding the core.
      want_drive_.fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kHandOverUs);
      while (!handle.done() && !stopped_ && std::chrono::steady_clock::now() < until) {
        if (lock.try_lock()) break;
        sched_yield();
      }
      want_drive_.fetch_sub(1);
      if (!lock.owns_lock()) {
        {
          std::lock_guard<std::mutex> d(driver_mu_);
        }
        driver_cv_.notify_one();  // the background thread may be waiting for us to take over
      }
    }
    if (!lock.owns_lock() || stopped_) {
      if (lock.owns_lock()) lock.unlock();
      if (handle.done()) break;
      if (interruptRequested()) return interrupted(handle);
      // Whoever holds the lock completes this handle or hands the engine back soon.
      stats_.handoff_waits.fetch_add(1, std::memory_order_relaxed);
      handle.waitFor(stopped_ ? kInterruptPollMs * 1e3 : 200);
      continue;
    }
    driving_.store(true, std::memory_order_release);
    Status st = driveUntil(handle);
    if (st.code() == StatusCode::kCancelled) {
      st = Status::Cancelled("rank " + std::to_string(topo_.rank) + " was " + st.message() + " (a signal)");
    }
    if (!st.ok() && !stopped_) endLoop(st);
    const bool more = !stopped_ && (tensors_.anyPending() || queue_.hasWork());
    {
      std::lock_guard<std::mutex> d(driver_mu_);
      driving_.store(false, std::memory_order_release);
      last_drive_end_ = std::chrono::steady_clock::now();
      if (more) handoff_.store(true);
    }
    lock.unlock();
    if (more) {
      driver_cv_.notify_one();
      host_->wakeSelf();
    }
  }
  return handle.wait();
}

}  // namespace lightcc
