// state.h: the binding layer's only state — the engine made by init() and the submissions out.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"

namespace lightcc::bindings {

// One front-level handle: the core handles of one submission (a tensor or a group), the objects
// the engine reads and writes until they complete, and the front's step that turns their
// results into its value. The one registry of in-flight work on the Python side.
struct Submission {
  std::vector<std::shared_ptr<Handle>> handles;
  pybind11::object keepalive;
  pybind11::object finish;  // callable(list of result tuples) -> the front's value; None: the list
  pybind11::object allocate;  // the front's output allocator (bindings/outputs.h), or None
  pybind11::object on_done;   // callable(id) run by the completion thread (completions.h), or None
  // GPU tensors: the caller's stream at submission, ordered after the results at synchronize.
  int device = -1;
  uintptr_t stream = 0;
};

// Submissions are touched with the GIL held (they own Python objects); mu guards the map against
// threads that released it.
struct CoreState {
  std::mutex mu;
  // Shared so a thread waiting (and driving the engine) with the GIL released keeps it alive
  // while another thread calls shutdown().
  std::shared_ptr<Engine> engine;
  uint64_t generation = 0;
  // abort_init(n) from any thread: the init() whose count is n gives up (see lifecycle.cc).
  std::atomic<uint64_t> abandoned_generation{0};
  std::unordered_map<int64_t, Submission> submissions;
  int64_t next_handle = 1;
};

// Never destroyed: its submissions own Python objects, which a static destructor would release
// after the interpreter has finalized (a crash at exit). dropSubmissions() empties it at Python's
// exit instead, while the interpreter still runs.
CoreState& state();

// Run at Python's exit (module.cc registers it with atexit when the module loads, after the
// completion thread has stopped), so after lightcc's own exit hook has shut the engine down:
// handles nobody synchronized let go of their objects here.
void dropSubmissions();

// The running engine; ValueError before init().
Engine& engine();

// Each subject's functions, added to the module by module.cc.
void bindLifecycle(pybind11::module_& m);    // lifecycle.cc: init, shutdown, topology
void bindSubmissions(pybind11::module_& m);  // submissions.cc: submit, run, poll, synchronize
void bindInfo(pybind11::module_& m);         // info.cc: counters, tuning, flags, builds, top-k state
void bindOpSpec(pybind11::module_& m);       // op_spec.cc: the op, reduce-op and dtype tables
void bindCodecs(pybind11::module_& m);       // codecs.cc: the outer-gradient codecs' CPU kernels

}  // namespace lightcc::bindings
