// Tests Progress — who drives the engine — with real threads and a fake cycle, no ranks.
//
// The fake cycle keeps ops in a list; a cycle completes every op it finds and records which
// thread ran it. The cases are the ones that once went wrong in the real engine: a caller must
// drive its own synchronous ops (no hand-off), async work must be served by the background
// thread, a caller that asks for the engine gets it between the thread's cycles (the livelock and
// "sticky" slow modes of benchmarks/engine/disturbance.py), a caller waiting out a long cycle sleeps
// instead of polling, an interrupt ends a wait at once, and stop ends everything. tests/single/test_cpp_units.py builds and runs it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "common/interrupt.h"
#include "engine/progress.h"

using namespace lightcc;
using lightcc::testing::check;
using Clock = std::chrono::steady_clock;

namespace {

class FakeCycle : public Progress::Cycle {
 public:
  struct Op {
    std::shared_ptr<Handle> handle;
    bool async;
    bool stuck;  // waits for peers that never come: no cycle completes it, only end() does
  };
  std::thread::id background;
  std::atomic<int> background_cycles{0}, caller_cycles{0};
  std::atomic<bool> stop_asked{false};
  std::atomic<int> cycle_us{0};  // how long a cycle takes

  void submit(const std::shared_ptr<Handle>& h, bool async, bool stuck = false) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ops_.push_back({h, async, stuck});
    }
    if (async) wake();
    peer_due_ = true;  // the peer submits its side too, and its cycle message rings our doorbell
  }

  // A peer rank: a few microseconds after each op here, its cycle message arrives, which rings
  // the doorbell (waking every sleeper on it) and makes a cycle due on this rank.
  void startPeer() {
    peer_ = std::thread([this] {
      while (!peer_stop_) {
        if (peer_due_.exchange(false)) {
          std::this_thread::sleep_for(std::chrono::microseconds(20));
          incoming_ = true;
          wake();
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(5));
        }
      }
    });
  }
  void stopPeer() {
    peer_stop_ = true;
    if (peer_.joinable()) peer_.join();
  }

  bool workReady(bool bg) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_asked || incoming_) return true;
    for (const Op& o : ops_) {
      if (!o.stuck && (o.async || !bg)) return true;
    }
    return false;
  }
  bool urgent() override { return stop_asked.load(); }
  bool asyncWork() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Op& o : ops_) {
      if (o.async) return true;
    }
    return false;
  }
  Status timers(bool*) override { return Status::OK(); }
  Status run(bool bg, bool* stop) override {
    if (stop_asked) {
      *stop = true;
      return Status::OK();
    }
    (bg ? background_cycles : caller_cycles).fetch_add(1);
    {
      // A cycle ends once the peer's message is in (the exchange of negotiation bits).
      std::unique_lock<std::mutex> lock(bell_mu_);
      bell_.wait_for(lock, std::chrono::milliseconds(50), [&] { return incoming_.load() || stop_asked.load(); });
    }
    incoming_ = false;
    const auto until = Clock::now() + std::chrono::microseconds(cycle_us.load());
    while (Clock::now() < until) {
    }
    std::vector<Op> taken;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<Op> keep;
      for (Op& o : ops_) (o.stuck ? keep : taken).push_back(o);
      ops_.swap(keep);
    }
    for (Op& o : taken) o.handle->complete(Status::OK());
    return Status::OK();
  }
  // Doorbell wake-ups that reached the background thread (its sleeps are the ones without spin).
  std::atomic<int> background_wakeups{0};

  Status sleep(const std::function<bool()>& ready, double max_us, bool spin) override {
    const auto until = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(max_us));
    std::unique_lock<std::mutex> lock(bell_mu_);
    while (!ready()) {
      if (interruptRequested()) return Status::Cancelled("interrupted while waiting for work");
      const auto now = Clock::now();
      if (now >= until) return Status::OK();
      const uint64_t seen = rung_;
      // A caller's sleep polls (it spins in the real engine); the background thread's waits for a ring.
      const auto limit = spin ? std::min(until, now + std::chrono::microseconds(200)) : until;
      bell_.wait_until(lock, limit, [&] { return rung_ != seen; });
      if (!spin && rung_ != seen) background_wakeups.fetch_add(1);
    }
    return Status::OK();
  }
  double idleUs(bool bg) override { return bg ? 1e6 : 20e3; }
  bool workLeft() override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Op& o : ops_) {
      if (!o.stuck) return true;
    }
    return false;
  }
  void wake() override {
    {
      std::lock_guard<std::mutex> lock(bell_mu_);
      ++rung_;
    }
    bell_.notify_all();
  }
  void end(const Status& st) override {
    std::vector<Op> taken;
    {
      std::lock_guard<std::mutex> lock(mu_);
      taken.swap(ops_);
    }
    for (Op& o : taken) o.handle->complete(st.ok() ? Status::Aborted("shut down") : st);
  }

 private:
  std::mutex mu_;
  std::vector<Op> ops_;
  std::mutex bell_mu_;
  std::condition_variable bell_;
  uint64_t rung_ = 0;
  std::atomic<bool> incoming_{false}, peer_due_{false}, peer_stop_{false};
  std::thread peer_;
};

struct Rig {
  FakeCycle cycle;
  std::atomic<uint64_t> caller_cycles{0}, handoff_waits{0};
  Progress progress{cycle, &caller_cycles, &handoff_waits};
  std::thread thread;
  Rig() {
    cycle.startPeer();
    thread = std::thread([this] { progress.runBackground(); });
  }
  ~Rig() {
    cycle.stop_asked = true;
    progress.poke();
    thread.join();
    cycle.stopPeer();
  }
  Status syncOp() {
    auto h = std::make_shared<Handle>();
    cycle.submit(h, false);
    Status st = progress.wait(*h);
    return st.ok() ? h->wait() : st;
  }
};

void testLegalMoves() {
  using S = Progress::State;
  check(Progress::legalMove(S::kAsleep, S::kCaller) && Progress::legalMove(S::kGrace, S::kThread) &&
            Progress::legalMove(S::kThread, S::kGrace) && Progress::legalMove(S::kCaller, S::kGrace),
        "listed moves are legal");
  check(!Progress::legalMove(S::kThread, S::kCaller) && !Progress::legalMove(S::kCaller, S::kThread) &&
            !Progress::legalMove(S::kCaller, S::kAsleep) && !Progress::legalMove(S::kStopped, S::kAsleep),
        "a caller never takes the engine from a running thread, and nothing leaves kStopped");
}

void testCallerDrivesItsOwnOps() {
  Rig rig;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the thread falls asleep
  const int wakeups = rig.cycle.background_wakeups.load();
  bool ok = true;
  for (int i = 0; i < 500; ++i) ok = ok && rig.syncOp().ok();
  check(ok, "500 synchronous ops complete");
  check(rig.cycle.caller_cycles.load() >= 495 && rig.cycle.background_cycles.load() <= 5,
        "the caller ran its own cycles (caller " + std::to_string(rig.cycle.caller_cycles.load()) + ", thread " +
            std::to_string(rig.cycle.background_cycles.load()) + ")");
  // While a caller drives, the thread waits it out off the doorbell: peers' messages (500 here)
  // wake only the caller.
  const int woke = rig.cycle.background_wakeups.load() - wakeups;
  check(woke <= 25, "the background thread stayed off the doorbell while the caller drove (woken " +
                        std::to_string(woke) + " times by 500 peer messages)");
}

void testAsyncWorkServedByThread() {
  Rig rig;
  std::vector<std::shared_ptr<Handle>> hs;
  for (int i = 0; i < 50; ++i) {
    hs.push_back(std::make_shared<Handle>());
    rig.cycle.submit(hs.back(), true);
  }
  bool all = true;
  for (auto& h : hs) all = all && h->waitFor(2e6);
  check(all && rig.cycle.background_cycles.load() > 0 && rig.cycle.caller_cycles.load() == 0,
        "async work is run by the background thread with no caller waiting");
}

// The thread is kept busy with async work while a caller runs synchronous ops: the caller must
// get the engine between the thread's cycles, and must not be stuck handing off for good after.
void testCallerGetsEngineFromBusyThread() {
  Rig rig;
  rig.cycle.cycle_us = 50;
  std::atomic<bool> done{false};
  std::thread producer([&] {
    while (!done) {
      auto h = std::make_shared<Handle>();
      rig.cycle.submit(h, true);
      Status ignored = h->wait();
      (void)ignored;
    }
  });
  const auto start = Clock::now();
  bool ok = true;
  for (int i = 0; i < 300; ++i) ok = ok && rig.syncOp().ok();
  const double during = std::chrono::duration<double>(Clock::now() - start).count();
  done = true;
  producer.join();
  check(ok && during < 10, "300 sync ops beside busy async work finished in " + std::to_string(during) + " s");
  // After the burst: a quiet loop must be driven by the caller again (no sticky hand-offs).
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const int before = rig.cycle.caller_cycles.load();
  const uint64_t waits_before = rig.handoff_waits.load();
  for (int i = 0; i < 300; ++i) ok = ok && rig.syncOp().ok();
  check(ok && rig.cycle.caller_cycles.load() - before >= 290,
        "after the burst the caller drives again (" + std::to_string(rig.cycle.caller_cycles.load() - before) +
            " of 300 cycles)");
  check(rig.handoff_waits.load() - waits_before <= 10,
        "after the burst almost no waits are handed off (" + std::to_string(rig.handoff_waits.load() - waits_before) +
            ")");
}

// A caller that finds the thread in a long cycle stands by on its handle until the thread lets go
// of the engine; it used to poll (200 us of yielding spin, a 200 us nap, over and over), which at
// 32 emulated ranks on 2 cores was a third of all CPU.
void testCallerStandsByDuringLongCycle() {
  Rig rig;
  rig.cycle.cycle_us = 40000;  // a 40 ms collective
  auto async = std::make_shared<Handle>();
  rig.cycle.submit(async, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the thread is inside that cycle
  const uint64_t waits_before = rig.handoff_waits.load();
  const auto start = Clock::now();
  const bool ok = rig.syncOp().ok();
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  const uint64_t waits = rig.handoff_waits.load() - waits_before;
  check(ok && async->waitFor(1e6), "the op beside the long cycle completes");
  check(waits <= 3, "the caller stood by instead of polling (" + std::to_string(waits) +
                        " hand-off waits during a 40 ms cycle; polling took about 75)");
  check(took < 1.0, "and it was not left asleep: " + std::to_string(took) + " s");
}

bool alwaysInterrupted() { return true; }

void testInterruptEndsAWait() {
  Rig rig;
  auto h = std::make_shared<Handle>();
  rig.cycle.submit(h, false);  // a caller's op that never completes: the fake cycle has to run it
  // Keep the engine busy on the thread side so the caller waits as a bystander, then interrupt.
  Status st;
  const auto start = Clock::now();
  {
    ScopedInterruptCheck signals(&alwaysInterrupted);
    auto never = std::make_shared<Handle>();  // not submitted: only an interrupt ends this wait
    st = rig.progress.wait(*never);
  }
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  check(st.code() == StatusCode::kCancelled && took < 1.0,
        "an interrupted wait returns Cancelled within " + std::to_string(took) + " s: " + st.message());
  check(rig.progress.stopped(), "an interrupted driver ends the engine (its peers are told elsewhere)");
  check(h->waitFor(1e6), "the end fails the pending op instead of leaving it hanging");
}

void testStopFailsWaiters() {
  auto rig = std::make_unique<Rig>();
  auto h = std::make_shared<Handle>();
  rig->cycle.submit(h, false, /*stuck=*/true);
  std::thread waiter([&] {
    Status st = rig->progress.wait(*h);
    (void)st;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  rig->cycle.stop_asked = true;
  rig->progress.poke();
  check(h->waitFor(2e6), "a stop completes a handle nobody else would");
  waiter.join();
  check(rig->progress.stopped(), "state is stopped");
  rig.reset();
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  std::printf("%s\n", "LegalMoves"); testLegalMoves();
  std::printf("%s\n", "CallerDrivesItsOwnOps"); testCallerDrivesItsOwnOps();
  std::printf("%s\n", "AsyncWorkServedByThread"); testAsyncWorkServedByThread();
  std::printf("%s\n", "CallerGetsEngineFromBusyThread"); testCallerGetsEngineFromBusyThread();
  std::printf("%s\n", "CallerStandsByDuringLongCycle"); testCallerStandsByDuringLongCycle();
  std::printf("%s\n", "InterruptEndsAWait"); testInterruptEndsAWait();
  std::printf("%s\n", "StopFailsWaiters"); testStopFailsWaiters();
  return testing::summary();
}
