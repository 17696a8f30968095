// errors.h: the Python edge's exceptions, Status -> exception, and signals raised during a wait.
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>

#include "common/status.h"

namespace lightcc::bindings {

// Raised for every core failure that is not the caller's fault; Python re-exports it as
// lightcc.LightCCInternalError (alias HorovodInternalError), a RuntimeError.
struct CoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Ranks disagreed on an operation (kMismatch): lightcc.LightCCMismatchError, a subclass of
// LightCCInternalError, so fronts can map it as Horovod does (TF: FailedPreconditionError).
struct MismatchError : CoreError {
  using CoreError::CoreError;
};

// Throws the exception for a failed Status (ValueError for the caller's mistakes); OK returns.
void raise(const Status& st);

// The waiting thread's interrupt check (common/interrupt.h): runs Python's signal handlers and
// keeps a handler's exception for raisePendingSignal().
bool pythonSignalRaised();

// With the GIL held, after a wait: a handler's exception wins over whatever the wait returned.
void raisePendingSignal();

}  // namespace lightcc::bindings
