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

void CommCore::fail(ncclResult_t code, const char* fmt, ...) {
  bool expected = false;
  if (!error_claimed_.compare_exchange_strong(expected, true)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(error_msg_, sizeof(error_msg_), fmt, ap);
  va_end(ap);
  error_.store(static_cast<int>(code), std::memory_order_release);
  notifyCompletion();  // a sleeping waiter must see the failure
}

}  // namespace harp
