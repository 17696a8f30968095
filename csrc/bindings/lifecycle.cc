// lifecycle.cc: init (interruptible), shutdown, abort_init and the topology getters.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>

#include "bindings/errors.h"
#include "bindings/python_store.h"
#include "bindings/state.h"
#include "common/config.h"
#include "common/interrupt.h"
#include "transport/rendezvous/store_server.h"

namespace py = pybind11;

namespace lightcc::bindings {
namespace {

// The interrupt check of the thread in init(): Python's signal handlers, or abort_init() naming
// this init's count. The rendezvous waits below give up with Cancelled within kInterruptPollMs.
thread_local uint64_t t_init_generation = 0;
bool initInterrupted() {
  if (state().abandoned_generation.load(std::memory_order_acquire) == t_init_generation) return true;
  return pythonSignalRaised();
}

// The store handed in (torch's, by the c10d backend), or none: init then meets at rank 0's own.
std::shared_ptr<PythonStore> handedStore(const py::dict& opts) {
  if (!opts.contains("store") || opts["store"].is_none()) return nullptr;
  return std::make_shared<PythonStore>(py::reinterpret_borrow<py::object>(opts["store"]),
                                       opts.contains("store_prefix") ? opts["store_prefix"].cast<std::string>() : "");
}

InitOptions initOptions(const py::dict& opts) {
  InitOptions o;
  o.rank = opts["rank"].cast<int>();
  o.size = opts["size"].cast<int>();
  o.hostname = opts["hostname"].cast<std::string>();
  o.rendezvous_host = opts["rendezvous_host"].cast<std::string>();
  o.rendezvous_port = opts["rendezvous_port"].cast<int>();
  o.secret = opts["secret"].cast<std::string>();
  o.process_sets = opts["process_sets"].cast<std::vector<std::vector<int>>>();
  o.bundled_net_plugin = opts["bundled_net_plugin"].cast<std::string>();
  if (opts.contains("nccl_library")) o.nccl_library = opts["nccl_library"].cast<std::string>();
  return o;
}

// The count this init() runs as: one more than the last, or (an elastic worker joining a job
// whose count is ahead of ours) the one asked for.
uint64_t nextGeneration(const py::dict& opts) {
  if (opts.contains("generation")) {
    const auto wanted = opts["generation"].cast<uint64_t>();
    if (wanted <= state().generation) {
      throw py::value_error("init generation " + std::to_string(wanted) + " is not above this process's " +
                            std::to_string(state().generation) + " earlier init() calls");
    }
    state().generation = wanted - 1;
  }
  return ++state().generation;
}

void init(py::dict opts) {
  Config config;
  std::map<std::string, std::string> flag_defaults;
  if (opts.contains("flag_defaults")) flag_defaults = opts["flag_defaults"].cast<std::map<std::string, std::string>>();
  raise(parseConfig(&config, flag_defaults));
  InitOptions o = initOptions(opts);
  // init(process_sets="dynamic") turns dynamic process sets on for this init, as the flag does.
  if (opts.contains("dynamic_process_sets") && opts["dynamic_process_sets"].cast<bool>()) {
    config.dynamic_process_sets = true;
  }
  if (state().engine) throw py::value_error("lightcc is already initialized; call shutdown() first");
  o.generation = nextGeneration(opts);
  std::shared_ptr<PythonStore> store = handedStore(opts);
  o.store = store;
  std::unique_ptr<Engine> made;
  Status st;
  {
    // Released while the ranks meet: a PythonStore takes the GIL for each call only.
    py::gil_scoped_release release;
    t_init_generation = o.generation;
    ScopedInterruptCheck interrupt(&initInterrupted);
    st = Engine::create(o, config, &made);
  }
  if (store) store->detach();  // init is over: let torch's store go now, with the GIL held
  raisePendingSignal();
  if (st.code() == StatusCode::kCancelled) {
    st = Status::Cancelled("rank " + std::to_string(o.rank) + ": init (generation " + std::to_string(o.generation) +
                           ") was abandoned: " + st.message());
  }
  raise(st);
  state().engine = std::move(made);
}

void shutdown() {
  std::shared_ptr<Engine> e = std::move(state().engine);
  if (!e) return;
  py::gil_scoped_release release;
  Status st = e->shutdown();
  e.reset();
  raise(st);
}

}  // namespace

void bindLifecycle(py::module_& m) {
  m.def("init", &init, "Start the engine (options dict from lightcc.common.basics).");
  m.def("shutdown", &shutdown);
  m.def(
      "abort",
      [](const std::string& why) {
        std::shared_ptr<Engine> e = state().engine;
        if (e) e->abort(Status::PeerFailure(why));
      },
      "Any thread: fail every pending and blocked operation of this rank's engine now with `why` "
      "(LightCCInternalError), without waiting for peers; shutdown() still follows.");
  m.def(
      "abort_init",
      [](uint64_t generation) { state().abandoned_generation.store(generation, std::memory_order_release); },
      "Any thread: make the init() whose count is `generation` (now or later) fail fast with "
      "LightCCInternalError instead of waiting out LIGHTCC_TIMEOUT for peers that will not come.");
  m.def("init_generation", [] { return state().generation; }, "How many init() calls this process made.");
  m.def("store_servers_started", &rendezvous::StoreServer::startedCount,
        "How many rendezvous stores this process has served (init through a store handed in serves none).");
  m.def("is_initialized", [] { return static_cast<bool>(state().engine); });
  m.def("rank", [] { return engine().topology().rank; });
  m.def("size", [] { return engine().topology().size; });
  m.def("local_rank", [] { return engine().topology().local_rank; });
  m.def("local_size", [] { return engine().topology().local_size; });
  m.def("cross_rank", [] { return engine().topology().cross_rank; });
  m.def("cross_size", [] { return engine().topology().cross_size; });
  m.def("is_homogeneous", [] { return engine().topology().homogeneous; });
}

}  // namespace lightcc::bindings
