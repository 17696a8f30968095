// python_store.cc: rendezvous::Store over a Python store object, one GIL hold per call.
#include "bindings/python_store.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "common/interrupt.h"
#include "transport/rendezvous/socket_util.h"

namespace py = pybind11;

namespace lightcc::bindings {
namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::string seconds(double s) {
  std::string text = std::to_string(s);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text + "s";
}

}  // namespace

PythonStore::PythonStore(py::object store, std::string prefix)
    : store_(std::move(store)), prefix_(std::move(prefix)) {
  has_check_ = py::hasattr(store_, "check");
}

PythonStore::~PythonStore() {
  if (!store_) return;
  if (!Py_IsInitialized()) {
    (void)store_.release().ptr();  // Python is gone: its objects with it
    return;
  }
  py::gil_scoped_acquire gil;
  store_ = py::object();
}

void PythonStore::detach() { store_ = py::object(); }

std::string PythonStore::where() const { return "torch's store (lightcc's keys under " + quoted(prefix_) + ")"; }

Status PythonStore::failed(const std::string& call, const std::string& key, const py::error_already_set& err) const {
  return Status::PeerFailure(call + " of key " + quoted(prefix_ + key) + " in torch's store failed: " + err.what());
}

Status PythonStore::detached(const std::string& call, const std::string& key) const {
  return Status::InvalidArgument(call + " of key " + quoted(prefix_ + key) +
                                 " after init: torch's store is lent to lightcc for init only");
}

Status PythonStore::set(const std::string& key, const std::string& value) {
  py::gil_scoped_acquire gil;
  if (!store_) return detached("set", key);
  try {
    store_.attr("set")(prefix_ + key, py::bytes(value));
  } catch (py::error_already_set& err) {
    return failed("set", key, err);
  }
  return Status::OK();
}

Status PythonStore::get(const std::string& key, std::string* value, double timeout_s) {
  LIGHTCC_RETURN_IF_ERROR(wait({key}, timeout_s));
  py::gil_scoped_acquire gil;
  if (!store_) return detached("get", key);
  try {
    *value = store_.attr("get")(prefix_ + key).cast<std::string>();
  } catch (py::error_already_set& err) {
    return failed("get", key, err);
  } catch (py::cast_error&) {
    return Status::PeerFailure("get of key " + quoted(prefix_ + key) + " in torch's store returned no bytes");
  }
  return Status::OK();
}

Status PythonStore::add(const std::string& key, int64_t delta, int64_t* result) {
  py::gil_scoped_acquire gil;
  if (!store_) return detached("add", key);
  try {
    *result = store_.attr("add")(prefix_ + key, delta).cast<int64_t>();
  } catch (py::error_already_set& err) {
    return failed("add", key, err);
  } catch (py::cast_error&) {
    return Status::PeerFailure("add of key " + quoted(prefix_ + key) + " in torch's store returned no integer");
  }
  return Status::OK();
}

Status PythonStore::wait(const std::vector<std::string>& keys, double timeout_s) {
  if (keys.empty()) return Status::OK();
  const rendezvous::Deadline deadline = rendezvous::Deadline::after(timeout_s);
  auto present = [&](const std::vector<std::string>& some, bool* yes) -> Status {
    py::gil_scoped_acquire gil;
    if (!store_) return detached("wait", some.front());
    py::list names;
    for (const std::string& k : some) names.append(prefix_ + k);
    try {
      if (has_check_) {
        *yes = store_.attr("check")(names).cast<bool>();
      } else {  // no check(): one wait for the whole time, not interruptible
        py::object timedelta = py::module_::import("datetime").attr("timedelta");
        store_.attr("wait")(names, timedelta(py::arg("seconds") = std::max(0.001, deadline.remainingMs() / 1000.0)));
        *yes = true;
      }
    } catch (py::error_already_set& err) {
      if (!has_check_ && err.matches(PyExc_RuntimeError) && deadline.expired()) {
        *yes = false;  // torch's timeout (DistStoreError is a RuntimeError); named below
        return Status::OK();
      }
      return failed(has_check_ ? "check" : "wait", some.front(), err);
    }
    return Status::OK();
  };
  // Polls back off to the interrupt check's period: a key set right away is seen within a
  // millisecond, and a long wait costs torch's store one small request per kInterruptPollMs.
  double sleep_ms = 0.5;
  for (;;) {
    bool yes = false;
    LIGHTCC_RETURN_IF_ERROR(present(keys, &yes));
    if (yes) return Status::OK();
    if (deadline.expired()) break;
    if (interruptRequested()) {
      return Status::Cancelled("interrupted while waiting for key " + quoted(prefix_ + keys.front()) +
                               " in torch's store");
    }
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(
        std::min({sleep_ms, kInterruptPollMs, static_cast<double>(deadline.remainingMs())})));
    sleep_ms *= 2;
  }
  std::string missing = keys.front();
  for (const std::string& k : keys) {
    if (!has_check_) break;
    bool yes = false;
    if (present({k}, &yes).ok() && !yes) {
      missing = k;
      break;
    }
  }
  return Status::Timeout("wait for " + std::to_string(keys.size()) + " key(s) in " + where() + " timed out after " +
                         seconds(timeout_s) + "; key " + quoted(prefix_ + missing) + " is still missing");
}

}  // namespace lightcc::bindings
