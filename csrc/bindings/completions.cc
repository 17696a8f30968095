// completions.cc: the completion thread: posted submission ids in, `on_done(id)` calls out.
#include "bindings/completions.h"

#include <pybind11/pybind11.h>

#include <utility>

#include "bindings/state.h"

namespace py = pybind11;

namespace lightcc::bindings {

Completions& Completions::instance() {
  // Never destroyed, as CoreState: stop() ends the thread at Python's exit.
  static Completions* c = new Completions();  // NOLINT: a process-lifetime singleton, see above
  return *c;
}

void Completions::post(int64_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(id);
    if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { run(); });
  }
  cv_.notify_one();
}

void Completions::stop() {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    t = std::move(thread_);
  }
  cv_.notify_one();
  if (t.joinable()) {
    py::gil_scoped_release release;  // the thread may be waiting for the GIL to deliver
    t.join();
  }
}

void Completions::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !ready_.empty(); });
    if (ready_.empty()) return;  // stopping, nothing left
    std::deque<int64_t> batch;
    batch.swap(ready_);
    lock.unlock();
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      for (int64_t id : batch) deliver(id);
    }
    lock.lock();
  }
}

void Completions::deliver(int64_t id) {
  py::object on_done;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    auto it = state().submissions.find(id);
    if (it == state().submissions.end()) return;  // synchronized by the front already
    on_done = it->second.on_done;
  }
  if (on_done.is_none()) return;
  try {
    on_done(id);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable("lightcc: a completion callback");
  }
}

}  // namespace lightcc::bindings
