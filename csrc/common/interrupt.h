// Interrupt: lets a long wait on a caller's thread give way to the Python edge's signal handlers.
//
// DESIGN. A caller blocked in the engine holds no GIL, so Python cannot run its signal handlers
// (KeyboardInterrupt, a SIGTERM handler) until the wait ends. The binding therefore installs a
// check on the waiting thread (ScopedInterruptCheck around the wait); the check takes the GIL and
// runs the pending handlers. Waits anywhere below — HostGroup::waitUntil, the engine's hand-off
// sleeps — call interruptRequested(), which runs the check at most every kInterruptPollMs and
// costs nothing on threads without one (the engine thread, stream workers). Once the check fires
// it stays fired on that thread until the scope ends, so every wait up the stack gives up too.
#pragma once

#include <chrono>

namespace lightcc {

// Returns true when the wait must stop (a handler raised). Runs on the waiting thread.
using InterruptCheck = bool (*)();

// How often a waiting thread looks for signals, and so how long a wait sleeps at most.
constexpr double kInterruptPollMs = 20;

class ScopedInterruptCheck {
 public:
  explicit ScopedInterruptCheck(InterruptCheck check);
  ~ScopedInterruptCheck();
  ScopedInterruptCheck(const ScopedInterruptCheck&) = delete;
  ScopedInterruptCheck& operator=(const ScopedInterruptCheck&) = delete;
  // Whether the check fired while this scope was installed.
  bool fired() const;

 private:
  InterruptCheck previous_check_;
  bool previous_fired_;
};

// True once this thread's check has fired; runs the check when kInterruptPollMs have passed.
bool interruptRequested();
// Whether this thread has a check (its waits must then wake up often enough to run it).
bool interruptCheckInstalled();

}  // namespace lightcc
