// Progress: the state machine of who drives the engine (see progress.h for states and rules).
#include "engine/progress.h"

#include <sched.h>

#include <algorithm>

#include "common/interrupt.h"
#include "common/logging.h"

namespace lightcc {
namespace {
using Clock = std::chrono::steady_clock;
// How long the background thread stays off the doorbell after a caller stopped driving.
constexpr auto kGrace = std::chrono::microseconds(1000);
// How long a caller polls for the background thread to hand mu_ over before it sleeps.
constexpr auto kHandOver = std::chrono::microseconds(200);
// The longest a caller stands by without looking again: a let-go wakes it sooner, so this bounds
// only what a let-go path that forgot to wake it would cost.
constexpr double kStandByMaxUs = 20e3;
using S = Progress::State;

bool legalImpl(S from, S to) {
  if (from == to || to == S::kStopped) return from != S::kStopped || to == S::kStopped;
  switch (from) {
    case S::kAsleep: return to == S::kThread || to == S::kCaller;
    case S::kThread: return to == S::kAsleep || to == S::kGrace;
    case S::kCaller: return to == S::kGrace;
    case S::kGrace: return to == S::kCaller || to == S::kThread;
    case S::kStopped: return false;
  }
  return false;
}
}  // namespace

bool Progress::legalMove(State from, State to) { return legalImpl(from, to); }

const char* Progress::stateName(State s) {
  switch (s) {
    case S::kAsleep: return "asleep";
    case S::kThread: return "thread";
    case S::kCaller: return "caller";
    case S::kGrace: return "grace";
    case S::kStopped: return "stopped";
  }
  return "?";
}

bool Progress::move(State from, State to) {
  if (!legalMove(from, to)) {
    LIGHTCC_LOG(kError) << "progress: illegal move " << stateName(from) << " -> " << stateName(to);
    return false;
  }
  return state_.compare_exchange_strong(from, to, std::memory_order_acq_rel);
}

void Progress::poke() {
  {
    std::lock_guard<std::mutex> d(cv_mu_);
  }
  cv_.notify_all();
  cycle_.wake();
  letGo();  // a stop: standers-by must see it
}

void Progress::letGo() {
  let_go_.fetch_add(1, std::memory_order_seq_cst);
  // A caller raises want_ before it reads let_go_, so with want_ at 0 nobody can be asleep on an
  // old count.
  if (want_.load(std::memory_order_seq_cst) == 0) return;
  std::lock_guard<std::mutex> g(standby_mu_);
  for (Handle* h : standing_by_) h->nudge();
}

void Progress::standBy(Handle& handle) {
  want_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> g(standby_mu_);
    standing_by_.push_back(&handle);
  }
  const uint64_t seen = let_go_.load(std::memory_order_seq_cst);
  // mu_ let go before we were listed (want_ was 0 then): look again at once rather than sleep.
  bool free = mu_.try_lock();
  if (free) mu_.unlock();
  if (!free && !stopped()) {
    const double us = interruptCheckInstalled() ? kInterruptPollMs * 1e3 : kStandByMaxUs;
    handle.waitFor(us, [&] { return let_go_.load(std::memory_order_acquire) != seen || stopped(); });
  }
  {
    std::lock_guard<std::mutex> g(standby_mu_);
    standing_by_.erase(std::find(standing_by_.begin(), standing_by_.end(), &handle));
  }
  want_.fetch_sub(1, std::memory_order_seq_cst);
}

void Progress::stop(const Status& st) {
  cycle_.end(st);
  state_.store(S::kStopped, std::memory_order_release);
  poke();
}

void Progress::runBackground() {
  std::unique_lock<std::mutex> lock(mu_);
  move(S::kAsleep, S::kThread);
  while (!stopped()) {
    bool run = false;
    if (Status st = cycle_.timers(&run); !st.ok()) {
      stop(st);
      break;
    }
    if (want_.load(std::memory_order_acquire) > 0) {
      // A caller waits for mu_: hand the engine over between cycles. Otherwise, once this thread
      // had taken a cycle (a peer's message came first), it would keep mu_ for every later one
      // and each op would pay a hand-off to its caller.
      move(S::kThread, S::kGrace);
      lock.unlock();
      letGo();
      waitOutCallers();
      lock.lock();
      if (!stopped()) move(state(), S::kThread);
      continue;
    }
    if (!run && !cycle_.workReady(/*background=*/true)) {
      sleepForWork(lock);
      continue;
    }
    bool stop_now = false;
    Status st = cycle_.run(/*background=*/true, &stop_now);
    if (!st.ok() || stop_now) {
      stop(st);
      break;
    }
  }
}

void Progress::sleepForWork(std::unique_lock<std::mutex>& lock) {
  const double max_us = cycle_.idleUs(/*background=*/true);
  move(S::kThread, S::kAsleep);
  lock.unlock();
  letGo();
  auto wanted = [&] {
    const S s = state();
    if (s != S::kAsleep || want_.load(std::memory_order_acquire) > 0) return true;  // a caller came
    if (cycle_.urgent() || cycle_.asyncWork()) return true;
    std::unique_lock<std::mutex> probe(mu_, std::try_to_lock);
    return probe.owns_lock() && cycle_.workReady(/*background=*/true);
  };
  // An idle engine must not take a core from the thread doing the work: no spinning.
  Status st = cycle_.sleep(wanted, max_us, /*spin=*/false);
  const S s = state();
  if (s == S::kCaller || s == S::kGrace || want_.load() > 0) waitOutCallers();
  lock.lock();
  if (stopped()) return;
  move(state(), S::kThread);
  if (!st.ok()) stop(st);
}

void Progress::waitOutCallers() {
  // A caller that just drove usually drives again soon (a loop of synchronous ops). Staying off
  // the doorbell meanwhile means peers' messages wake only that caller. The grace is timed from
  // the last drive's end, so a caller need not wake this thread after every op; it notifies only
  // when it leaves work behind.
  std::unique_lock<std::mutex> d(cv_mu_);
  while (!stopped()) {
    if (cycle_.urgent()) return;
    // A caller about to drive runs queued async work too; returning for it would only make this
    // thread take mu_ back from under that caller, again and again.
    const bool wanted = want_.load() > 0;
    if (!wanted && (left_work_.exchange(false) || cycle_.asyncWork())) return;
    const auto now = Clock::now();
    const bool driving = state() == S::kCaller || wanted;
    if (!driving && now >= last_drive_end_ + kGrace) return;
    cv_.wait_until(d, driving ? now + kGrace : last_drive_end_ + kGrace);
  }
}

bool Progress::takeOver(Handle& handle, std::unique_lock<std::mutex>& lock) {
  if (lock.try_lock() || stopped()) return lock.owns_lock();
  // The background thread is in a cycle; it hands mu_ over when that ends (it checks want_
  // between cycles), which takes microseconds, so poll for it yielding the core.
  want_.fetch_add(1);
  const auto until = Clock::now() + kHandOver;
  while (!handle.done() && !stopped() && Clock::now() < until) {
    if (lock.try_lock()) break;
    sched_yield();
  }
  want_.fetch_sub(1);
  if (!lock.owns_lock()) {
    {
      std::lock_guard<std::mutex> d(cv_mu_);
    }
    cv_.notify_one();  // the background thread may be waiting for us to take over
  }
  return lock.owns_lock();
}

Status Progress::drive(Handle& handle) {
  while (!handle.done() && !stopped()) {
    bool run = cycle_.workReady(/*background=*/false);
    if (!run) LIGHTCC_RETURN_IF_ERROR(cycle_.timers(&run));
    if (!run) {
      // Peers answer within microseconds when they are driving too, so spin first; mu_ stays
      // ours because nobody else could use it better.
      LIGHTCC_RETURN_IF_ERROR(cycle_.sleep([&] { return cycle_.workReady(false); }, cycle_.idleUs(false), true));
      continue;
    }
    bool stop_now = false;
    caller_cycles_->fetch_add(1, std::memory_order_relaxed);
    LIGHTCC_RETURN_IF_ERROR(cycle_.run(/*background=*/false, &stop_now));
    if (stop_now) {
      stop(Status::OK());
      return Status::OK();
    }
  }
  return Status::OK();
}

Status Progress::wait(Handle& handle) {
  while (!handle.done()) {
    std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
    if (!takeOver(handle, lock) || stopped()) {
      if (lock.owns_lock()) lock.unlock();
      if (handle.done()) break;
      if (interruptRequested()) return Status::Cancelled("interrupted while another thread drove the engine");
      // Whoever holds mu_ completes this handle or, seeing want_, hands the engine over at the
      // end of its cycle and wakes us.
      handoff_waits_->fetch_add(1, std::memory_order_relaxed);
      if (stopped()) {
        handle.waitFor(kInterruptPollMs * 1e3);
      } else {
        standBy(handle);
      }
      continue;
    }
    move(state(), S::kCaller);
    Status st = drive(handle);
    if (!st.ok() && !stopped()) stop(st);
    const bool more = !stopped() && cycle_.workLeft();
    {
      std::lock_guard<std::mutex> d(cv_mu_);
      if (!stopped()) move(S::kCaller, S::kGrace);
      last_drive_end_ = Clock::now();
      if (more) left_work_.store(true);
    }
    lock.unlock();
    letGo();
    if (more) {
      cv_.notify_one();
      cycle_.wake();
    }
  }
  return Status::OK();
}

}  // namespace lightcc
