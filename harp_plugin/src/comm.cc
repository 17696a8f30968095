// Comm state: lane and comm lifetimes, and first-error recording.
#include "comm.h"

#include <cstdarg>
#include <cstdio>

#include "completion_hook.h"
#include "flow.h"

namespace harp {

// Here, where Flow is complete: a lane owns its flows, so destroying one destroys them.
Lane::Lane() = default;
Lane::~Lane() = default;
CommCore::~CommCore() { magic = kDeadMagic; }

bool FirstError::record(ncclResult_t code, const char* fmt, va_list ap) {
  bool expected = false;
  if (!claimed_.compare_exchange_strong(expected, true)) return false;
  vsnprintf(msg_, sizeof(msg_), fmt, ap);
  code_.store(static_cast<int>(code), std::memory_order_release);
  return true;
}

void CommCore::fail(ncclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const bool first = error_.record(code, fmt, ap);
  va_end(ap);
  if (first) notifyCompletion();  // a sleeping waiter must see the failure
}

}  // namespace harp
