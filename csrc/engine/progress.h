// Progress: who drives the engine — its background thread, or a caller waiting on a handle.
//
// DESIGN. Whoever drives holds mu_ and runs cycles (negotiate + execute). A caller blocked in
// wait() that finds mu_ free runs the cycles itself until its handle completes — the MPI model:
// a synchronous op then costs no hand-off to another thread and back, each a futex wake-up of
// tens of microseconds on a busy core. The background thread serves everything nobody waits
// for: async work, peers' cycles, timers, shutdown. Who drives is a named state:
//
//   kAsleep  nobody drives; the background thread sleeps on the doorbell until work or a peer's
//            cycle arrives.                 -> kThread (work), kCaller (a caller takes mu_)
//   kThread  the background thread runs cycles.
//                                           -> kAsleep (no work), kGrace (a caller asked for mu_)
//   kCaller  a caller runs cycles until its handle completes.        -> kGrace (handle done)
//   kGrace   nobody drives; a caller drove or asked to. The background thread waits on cv_, not
//            on the doorbell, so peers' messages wake only the caller that will read them and
//            nothing spins beside it.  -> kCaller (the caller takes mu_), kThread (work left
//            behind, async work, or the grace expired with work), kAsleep (the grace expired)
//   kStopped the engine ended; every handle has been failed. Final.
//
// Only the transitions above are legal; move() checks them. Two rules keep the roles from
// swapping for good (each once caused a sticky slow mode where every op paid a hand-off): the
// background thread leaves a synchronous caller's queued entries to that caller
// (Cycle::workReady(background=true)), and a caller that finds the thread in a cycle raises
// want_ so the thread hands mu_ over at the end of that cycle. The grace is timed from the last
// drive's end, so a caller in a loop of synchronous ops never has to wake the thread.
//
// A caller that cannot take mu_ at once stands by: want_ stays raised and it sleeps on its handle
// until the handle completes or whoever drives lets go of mu_ (every let-go wakes the standers-by).
// It used to poll instead, 200 us of yielding spin then a 200 us nap, again and again for as long
// as the thread's collective ran: at 32 ranks on 2 cores those polls were a third of all CPU.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "engine/handle.h"

namespace lightcc {

class Progress {
 public:
  enum class State : uint8_t { kAsleep, kThread, kCaller, kGrace, kStopped };
  static const char* stateName(State s);
  // The transitions listed in the DESIGN block (and staying put); nothing leaves kStopped.
  static bool legalMove(State from, State to);

  // What Progress drives: the engine's cycle, or a fake one in tests. Called with mu_ held
  // unless said otherwise.
  class Cycle {
   public:
    virtual ~Cycle() = default;
    // Is there a cycle to run? The background thread leaves callers' own entries to them.
    virtual bool workReady(bool background) = 0;
    // Without mu_: a stop request or a failure the background thread must act on at once.
    virtual bool urgent() = 0;
    // Without mu_: queued work no caller will drive (async ops).
    virtual bool asyncWork() = 0;
    // Timers due (stall inspector, liveness): may ask for a cycle; an error ends the engine.
    virtual Status timers(bool* want_cycle) = 0;
    virtual Status run(bool background, bool* stop) = 0;
    // Without mu_ (background) or with it (caller): sleep until ready() or max_us.
    virtual Status sleep(const std::function<bool()>& ready, double max_us, bool spin) = 0;
    virtual double idleUs(bool background) = 0;  // the longest sleep with nothing to do
    virtual bool workLeft() = 0;                 // after a caller drove: anything pending?
    virtual void wake() = 0;                     // rings this rank's doorbell (any thread)
    virtual void end(const Status& st) = 0;      // fails every handle; OK = shutdown
  };

  Progress(Cycle& cycle, std::atomic<uint64_t>* caller_cycles, std::atomic<uint64_t>* handoff_waits)
      : cycle_(cycle), caller_cycles_(caller_cycles), handoff_waits_(handoff_waits) {}

  // The background thread: cycles, sleeps and hand-overs until the engine stops.
  void runBackground();
  // A caller: drives (or waits for whoever drives) until the handle completes or the engine
  // stops. Cancelled: the caller was interrupted while another thread drove (handle not done).
  Status wait(Handle& handle);
  // Any thread: the background thread should look again now (shutdown, abort).
  void poke();

  State state() const { return state_.load(std::memory_order_acquire); }
  bool stopped() const { return state() == State::kStopped; }

 private:
  bool move(State from, State to);  // the one place the state changes; false if not `from`
  void stop(const Status& st);      // with mu_ held: end the cycle and enter kStopped
  void sleepForWork(std::unique_lock<std::mutex>& lock);
  void waitOutCallers();
  Status drive(Handle& handle);
  bool takeOver(Handle& handle, std::unique_lock<std::mutex>& lock);
  void standBy(Handle& handle);  // without mu_: until the handle completes or mu_ is let go
  void letGo();                  // after unlocking mu_: wake the callers standing by

  Cycle& cycle_;
  std::atomic<uint64_t>* caller_cycles_;
  std::atomic<uint64_t>* handoff_waits_;
  std::mutex mu_;  // held by whoever drives
  std::atomic<State> state_{State::kAsleep};
  std::atomic<int> want_{0};            // callers waiting for mu_ to drive
  std::atomic<bool> left_work_{false};  // a caller stopped driving with work pending
  std::mutex cv_mu_;                    // with cv_: the background thread waits out callers
  std::condition_variable cv_;
  std::chrono::steady_clock::time_point last_drive_end_;  // guarded by cv_mu_
  std::atomic<uint64_t> let_go_{0};  // how many times a driver let go of mu_ (standers-by wait for a change)
  std::mutex standby_mu_;            // guards standing_by_
  std::vector<Handle*> standing_by_;  // the handles of callers in standBy()
};

}  // namespace lightcc
