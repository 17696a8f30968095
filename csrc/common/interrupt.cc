// Interrupt: the per-thread check, rate-limited so a spinning wait does not take the GIL each poll.
#include "common/interrupt.h"

namespace lightcc {
namespace {

struct ThreadCheck {
  InterruptCheck check = nullptr;
  bool fired = false;
  std::chrono::steady_clock::time_point last{};
};
thread_local ThreadCheck t_check;

}  // namespace

ScopedInterruptCheck::ScopedInterruptCheck(InterruptCheck check)
    : previous_check_(t_check.check), previous_fired_(t_check.fired) {
  t_check.check = check;
  t_check.fired = false;
  t_check.last = std::chrono::steady_clock::now();
}

ScopedInterruptCheck::~ScopedInterruptCheck() {
  t_check.check = previous_check_;
  t_check.fired = previous_fired_;
}

bool ScopedInterruptCheck::fired() const { return t_check.fired; }

bool interruptRequested() {
  ThreadCheck& t = t_check;
  if (t.check == nullptr) return false;
  if (t.fired) return true;
  const auto now = std::chrono::steady_clock::now();
  if (now - t.last < std::chrono::microseconds(static_cast<int64_t>(kInterruptPollMs * 1e3))) return false;
  t.last = now;
  t.fired = t.check();
  return t.fired;
}

bool interruptCheckInstalled() { return t_check.check != nullptr; }

}  // namespace lightcc
