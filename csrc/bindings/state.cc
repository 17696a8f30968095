// state.cc: the binding layer's one CoreState, and access to the running engine.
#include "bindings/state.h"

namespace py = pybind11;

namespace lightcc::bindings {

CoreState& state() {
  static CoreState* s = std::make_unique<CoreState>().release();
  return *s;
}

void dropSubmissions() {
  std::unordered_map<int64_t, Submission> dropped;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    dropped.swap(state().submissions);
  }
}

Engine& engine() {
  Engine* e = state().engine.get();
  if (e == nullptr) throw py::value_error("lightcc has not been initialized; use hvd.init().");
  return *e;
}

}  // namespace lightcc::bindings
