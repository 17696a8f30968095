// errors.cc: Status -> Python exception, and the signal handlers' exceptions kept across a wait.
#include "bindings/errors.h"

namespace py = pybind11;

namespace lightcc::bindings {
namespace {

// A signal handler that raised while a thread waited in the engine (KeyboardInterrupt, a SIGTERM
// handler's exception): kept here until the wait returns, then raised instead of the engine's error.
struct PendingPythonError {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
};
thread_local PendingPythonError t_pending;

}  // namespace

void raise(const Status& st) {
  if (st.ok()) return;
  if (st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kPreconditionFailed) {
    throw py::value_error(st.message());
  }
  if (st.code() == StatusCode::kMismatch) throw MismatchError(st.message());
  throw CoreError(st.message());
}

bool pythonSignalRaised() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return false;
  PyErr_Fetch(&t_pending.type, &t_pending.value, &t_pending.traceback);
  return true;
}

void raisePendingSignal() {
  if (t_pending.type == nullptr) return;
  PyErr_Restore(t_pending.type, t_pending.value, t_pending.traceback);
  t_pending = PendingPythonError{};
  throw py::error_already_set();
}

}  // namespace lightcc::bindings
