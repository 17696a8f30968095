// lightcc._core: the thin pybind11 edge — addresses in, handle ids out, Status -> exception.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "common/config.h"
#include "common/interrupt.h"
#include "common/logging.h"
#include "device/cuda_device.h"
#include "device/nccl.h"
#include "engine/engine.h"
#include "kernels/reduce.h"

namespace py = pybind11;
using namespace lightcc;

namespace {

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

void raise(const Status& st) {
  if (st.ok()) return;
  if (st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kPreconditionFailed) {
    throw py::value_error(st.message());
  }
  if (st.code() == StatusCode::kMismatch) throw MismatchError(st.message());
  throw CoreError(st.message());
}

// A signal handler that raised while a thread waited in the engine (KeyboardInterrupt, a SIGTERM
// handler's exception): kept here until the wait returns, then raised instead of the engine's error.
struct PendingPythonError {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
};
thread_local PendingPythonError t_pending;

// The waiting thread's interrupt check (common/interrupt.h): run Python's signal handlers.
bool pythonSignalRaised() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return false;
  PyErr_Fetch(&t_pending.type, &t_pending.value, &t_pending.traceback);
  return true;
}

// With the GIL held, after a wait: a handler's exception wins over whatever the wait returned.
void raisePendingSignal() {
  if (t_pending.type == nullptr) return;
  PyErr_Restore(t_pending.type, t_pending.value, t_pending.traceback);
  t_pending = PendingPythonError{};
  throw py::error_already_set();
}

// One front-level handle: the core handles of one submission (a tensor or a group), the objects
// the engine reads and writes until they complete, and the front's step that turns their
// results into its value. The one registry of in-flight work on the Python side.
struct Submission {
  std::vector<std::shared_ptr<Handle>> handles;
  py::object keepalive;
  py::object finish;  // callable(list of result tuples) -> the front's value; None: the list
  // GPU tensors: the caller's stream at submission, ordered after the results at synchronize.
  int device = -1;
  uintptr_t stream = 0;
};

// The binding layer's only state: the engine made by init(), and the submissions handed out.
// Submissions are touched with the GIL held (they own Python objects); mu guards the map against
// threads that released it.
struct CoreState {
  std::mutex mu;
  // Shared so a thread waiting (and driving the engine) with the GIL released keeps it alive
  // while another thread calls shutdown().
  std::shared_ptr<Engine> engine;
  uint64_t generation = 0;
  // abort_init(n) from any thread: the init() whose count is n gives up (see initInterrupted).
  std::atomic<uint64_t> abandoned_generation{0};
  std::unordered_map<int64_t, Submission> submissions;
  int64_t next_handle = 1;
};
CoreState& state() {
  // Never destroyed: its submissions own Python objects, which a static destructor would release
  // after the interpreter has finalized (a crash at exit). dropSubmissions() empties it at
  // Python's exit instead, while the interpreter still runs.
  static CoreState* s = std::make_unique<CoreState>().release();
  return *s;
}

// Registered with Python's atexit when the module loads, so it runs after lightcc's own exit
// hook has shut the engine down: handles nobody synchronized let go of their objects here.
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

// The interrupt check of the thread in init(): Python's signal handlers, or abort_init() naming
// this init's count. The rendezvous waits below give up with Cancelled within kInterruptPollMs.
thread_local uint64_t t_init_generation = 0;
bool initInterrupted() {
  if (state().abandoned_generation.load(std::memory_order_acquire) == t_init_generation) return true;
  return pythonSignalRaised();
}

void init(py::dict opts) {
  Config config;
  raise(parseConfig(&config));
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
  // init(process_sets="dynamic") turns dynamic process sets on for this init, as the flag does.
  if (opts.contains("dynamic_process_sets") && opts["dynamic_process_sets"].cast<bool>()) {
    config.dynamic_process_sets = true;
  }
  if (state().engine) throw py::value_error("lightcc is already initialized; call shutdown() first");
  if (opts.contains("generation")) {  // an elastic worker joining a job whose count is ahead of ours
    const auto wanted = opts["generation"].cast<uint64_t>();
    if (wanted <= state().generation) {
      throw py::value_error("init generation " + std::to_string(wanted) + " is not above this process's " +
                            std::to_string(state().generation) + " earlier init() calls");
    }
    state().generation = wanted - 1;
  }
  o.generation = ++state().generation;
  std::unique_ptr<Engine> made;
  Status st;
  {
    py::gil_scoped_release release;
    t_init_generation = o.generation;
    ScopedInterruptCheck interrupt(&initInterrupted);
    st = Engine::create(o, config, &made);
  }
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

using TensorArgs = std::tuple<int, std::string, uintptr_t, uintptr_t, int, std::vector<int64_t>, int, int, double,
                              double, int, std::vector<int64_t>, int, uintptr_t>;

TensorEntry makeEntry(const TensorArgs& t) {
  const auto& [op, name, in, out, dtype, shape, reduce_op, root, pre, post, ps, aux, device, stream] = t;
  if (op < 0 || op >= kNumOpTypes) throw py::value_error("unknown op code " + std::to_string(op));
  if (!isValidDataType(dtype)) throw py::value_error("unsupported dtype code " + std::to_string(dtype));
  if (reduce_op < 0 || reduce_op > 5) throw py::value_error("unknown reduce op " + std::to_string(reduce_op));
  TensorEntry entry;
  entry.request.op = static_cast<OpType>(op);
  entry.request.name = name;
  entry.request.dtype = static_cast<DataType>(dtype);
  entry.request.shape = shape;
  entry.request.reduce_op = static_cast<ReduceOp>(reduce_op);
  entry.request.root = root;
  entry.request.prescale = pre;
  entry.request.postscale = post;
  entry.request.process_set_id = ps;
  entry.request.aux = aux;
  entry.request.device = device < 0 ? -1 : device;
  entry.input = reinterpret_cast<const void*>(in);
  entry.output = reinterpret_cast<void*>(out);
  entry.handle = std::make_shared<Handle>();
  return entry;
}

// GPU tensors: the engine's stream will wait for what the caller's stream has queued up to now.
// One event per (device, stream) of a submission, however many tensors it holds.
void markReady(std::vector<TensorEntry>& entries, const std::vector<TensorArgs>& args) {
  device::EventPtr event;
  int device = -1;
  uintptr_t stream = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const int d = std::get<12>(args[i]);
    const uintptr_t s = std::get<13>(args[i]);
    if (d < 0 || std::get<0>(args[i]) > static_cast<int>(OpType::kReducescatter)) continue;
    if (!event || d != device || s != stream) {
      raise(device::recordOnStream(d, reinterpret_cast<void*>(s), &event));
      device = d;
      stream = s;
    }
    entries[i].ready = event;
  }
}

// GPU results: the caller's stream runs after the engine's work on them (no host wait).
void orderCallerStream(int device, uintptr_t stream, const std::vector<std::shared_ptr<Handle>>& handles) {
  if (device < 0) return;
  const device::Event* ordered = nullptr;  // tensors of one fused batch share their event
  for (const auto& h : handles) {
    const device::EventPtr& done = h->result().done;
    if (done && done.get() != ordered) {
      raise(device::orderStream(device, reinterpret_cast<void*>(stream), done));
      ordered = done.get();
    }
  }
}

py::tuple resultTuple(const Handle& h) {
  const HandleResult& r = h.result();
  py::object buf = r.output ? py::cast(r.output) : r.device_output ? py::cast(r.device_output) : py::none();
  return py::make_tuple(buf, r.output_shape, r.received_splits, r.value);
}

// enqueue + wait + result for one tensor, without a handle id: the synchronous ops' path, where
// the front's handle bookkeeping cost more than the engine's own work for a small tensor.
py::tuple runNow(const TensorArgs& t) {
  std::shared_ptr<Engine> e = state().engine;
  if (!e) throw py::value_error("lightcc has not been initialized; use hvd.init().");
  std::vector<TensorEntry> entries;
  entries.push_back(makeEntry(t));
  markReady(entries, {t});
  std::shared_ptr<Handle> h = entries.back().handle;
  h->addWaiter(1);  // with the GIL held, so the engine cannot be shut down under us
  Status st;
  {
    py::gil_scoped_release release;
    st = e->enqueue(std::move(entries), /*wake=*/false);
    if (st.ok()) {
      e->nudgeFusion();
      ScopedInterruptCheck signals(&pythonSignalRaised);
      st = e->wait(*h);
    }
  }
  h->addWaiter(-1);
  raisePendingSignal();
  raise(st);
  orderCallerStream(std::get<12>(t), std::get<13>(t), {h});
  return resultTuple(*h);
}

// Queues one tensor or a group and registers it; returns the front-level handle id.
int64_t submit(const std::vector<TensorArgs>& tensors, bool wake, py::object keepalive, py::object finish) {
  Engine& e = engine();
  std::vector<TensorEntry> entries;
  Submission sub;
  for (const auto& t : tensors) {
    entries.push_back(makeEntry(t));
    sub.handles.push_back(entries.back().handle);
  }
  markReady(entries, tensors);
  Status st;
  {
    py::gil_scoped_release release;
    st = e.enqueue(std::move(entries), wake);
  }
  raise(st);
  sub.keepalive = std::move(keepalive);
  sub.finish = std::move(finish);
  if (!tensors.empty()) {
    sub.device = std::get<12>(tensors.front());
    sub.stream = std::get<13>(tensors.front());
  }
  std::lock_guard<std::mutex> lock(state().mu);
  const int64_t id = state().next_handle++;
  state().submissions.emplace(id, std::move(sub));
  return id;
}

// DataType of a buffer's struct format, or -1 (then the front takes its general path).
int formatCode(const char* format, Py_ssize_t itemsize) {
  if (format == nullptr) return static_cast<int>(DataType::kUInt8);
  if (*format == '<' || *format == '=' || *format == '@') ++format;
  if (format[0] == '\0' || format[1] != '\0') return -1;
  switch (format[0]) {
    case 'f': return static_cast<int>(DataType::kFloat32);
    case 'd': return static_cast<int>(DataType::kFloat64);
    case 'e': return static_cast<int>(DataType::kFloat16);
    case 'b': return static_cast<int>(DataType::kInt8);
    case 'B': return static_cast<int>(DataType::kUInt8);
    case '?': return static_cast<int>(DataType::kBool);
    case 'h': return static_cast<int>(DataType::kInt16);
    case 'H': return static_cast<int>(DataType::kUInt16);
    case 'i': return itemsize == 4 ? static_cast<int>(DataType::kInt32) : -1;
    case 'l':
    case 'q': return itemsize == 8 ? static_cast<int>(DataType::kInt64) : itemsize == 4 ? static_cast<int>(DataType::kInt32) : -1;
    default: return -1;
  }
}

// The NumPy front's single-tensor in-place async allreduce, whole in C++: the array's buffer
// gives address, dtype and shape, the array is kept alive, and synchronize returns it. Returns
// -1 (nothing queued) for arrays the general path must handle (read-only, not C-contiguous, a
// dtype without a struct format), so that path gives the error or the wrapping.
int64_t allreduceArrayAsync(py::handle array, const std::string& name, int reduce_op, double pre, double post,
                            int set_id, bool wake) {
  Engine& e = engine();
  Py_buffer view;
  if (PyObject_GetBuffer(array.ptr(), &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    return -1;
  }
  const int dtype = formatCode(view.format, view.itemsize);
  std::vector<int64_t> shape(view.shape, view.shape + view.ndim);
  void* data = view.buf;
  PyBuffer_Release(&view);
  if (dtype < 0) return -1;
  TensorArgs t{0, name, reinterpret_cast<uintptr_t>(data), reinterpret_cast<uintptr_t>(data), dtype, shape,
               reduce_op, 0, pre, post, set_id, {}, -1, 0};
  return submit({t}, wake, py::reinterpret_borrow<py::object>(array), py::none());
}

bool poll(int64_t id) {
  std::lock_guard<std::mutex> lock(state().mu);
  auto it = state().submissions.find(id);
  if (it == state().submissions.end()) {
    throw py::value_error("handle " + std::to_string(id) + " was not created or has already been synchronized");
  }
  for (const auto& h : it->second.handles) {
    if (!h->done()) return false;
    // A GPU op is finished when its work on the device is, not when it was enqueued.
    if (h->result().done) {
      bool finished = false;
      raise(h->result().done->query(&finished));
      if (!finished) return false;
    }
  }
  return true;
}

// Waits for every tensor of a submission, unregisters it and returns the front's value (the
// first error is raised once all have completed; the buffers are released only then).
py::object synchronize(int64_t id) {
  Submission sub;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    auto it = state().submissions.find(id);
    if (it == state().submissions.end()) {
      throw py::value_error("handle " + std::to_string(id) + " was not created or has already been synchronized");
    }
    sub = std::move(it->second);
    state().submissions.erase(it);
  }
  std::shared_ptr<Engine> e = state().engine;
  Status first;
  for (auto& h : sub.handles) h->addWaiter(1);  // with the GIL held, so the engine cannot be shut down under us
  if (e) e->nudgeFusion();
  {
    py::gil_scoped_release release;
    ScopedInterruptCheck signals(&pythonSignalRaised);
    for (auto& h : sub.handles) {
      Status st = e ? e->wait(*h) : h->wait();
      if (first.ok() && !st.ok()) first = st;
    }
  }
  for (auto& h : sub.handles) h->addWaiter(-1);
  raisePendingSignal();
  raise(first);
  orderCallerStream(sub.device, sub.stream, sub.handles);
  py::list results;
  for (auto& h : sub.handles) results.append(resultTuple(*h));
  if (sub.finish.is_none()) return sub.keepalive;  // an in-place op: its tensor is the value
  return sub.finish(results);
}

py::dict buildInfo() {
  py::dict d;
  d["simd"] = kernels::simdLevel();
#ifdef LIGHTCC_VERSION
  d["version"] = LIGHTCC_VERSION;
#endif
  return d;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "lightcc C++ core (engine, algorithms, transports). Use the fronts, not this module.";
  py::module_::import("atexit").attr("register")(py::cpp_function(&dropSubmissions));
  auto core_error = py::register_exception<CoreError>(m, "LightCCInternalError", PyExc_RuntimeError);
  py::register_exception<MismatchError>(m, "LightCCMismatchError", core_error.ptr());
  py::class_<HostBuffer, std::shared_ptr<HostBuffer>>(m, "HostBuffer", py::buffer_protocol())
      .def_buffer([](HostBuffer& b) {
        return py::buffer_info(b.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(b.size())}, {static_cast<py::ssize_t>(1)});
      })
      .def("__len__", &HostBuffer::size);
  // An engine-allocated output of a device op: GPU memory (the fronts wrap `ptr` through
  // __cuda_array_interface__) or, under LIGHTCC_DEVICE_EXECUTOR=host, host memory (a buffer).
  py::class_<device::Buffer, std::shared_ptr<device::Buffer>>(m, "DeviceBuffer", py::buffer_protocol())
      .def_buffer([](device::Buffer& b) {
        if (b.device() >= 0) throw py::value_error("GPU memory has no buffer interface; use ptr");
        return py::buffer_info(b.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(b.size())}, {static_cast<py::ssize_t>(1)});
      })
      .def("__len__", &device::Buffer::size)
      .def_property_readonly("ptr", [](const device::Buffer& b) { return reinterpret_cast<uintptr_t>(b.data()); })
      .def_property_readonly("device", &device::Buffer::device);

  m.def("init", &init, "Start the engine (options dict from lightcc.common.basics).");
  m.def("shutdown", &shutdown);
  m.def(
      "abort_init",
      [](uint64_t generation) { state().abandoned_generation.store(generation, std::memory_order_release); },
      "Any thread: make the init() whose count is `generation` (now or later) fail fast with "
      "LightCCInternalError instead of waiting out LIGHTCC_TIMEOUT for peers that will not come.");
  m.def("init_generation", [] { return state().generation; }, "How many init() calls this process made.");
  m.def("is_initialized", [] { return static_cast<bool>(state().engine); });
  m.def("rank", [] { return engine().topology().rank; });
  m.def("size", [] { return engine().topology().size; });
  m.def("local_rank", [] { return engine().topology().local_rank; });
  m.def("local_size", [] { return engine().topology().local_size; });
  m.def("cross_rank", [] { return engine().topology().cross_rank; });
  m.def("cross_size", [] { return engine().topology().cross_size; });
  m.def("is_homogeneous", [] { return engine().topology().homogeneous; });
  m.def(
      "address",
      [](py::handle obj) -> uintptr_t {
        // The buffer protocol without building a buffer_info: this runs twice per tensor.
        Py_buffer view;
        if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_ANY_CONTIGUOUS) != 0) throw py::error_already_set();
        auto addr = reinterpret_cast<uintptr_t>(view.buf);
        PyBuffer_Release(&view);
        return addr;
      },
      "Address of a contiguous buffer's first byte.");
  m.def("submit", &submit, py::arg("tensors"), py::arg("wake"), py::arg("keepalive"), py::arg("finish"),
        "Queue tensors (one group) and return one handle id. wake=False: the caller synchronizes at once and "
        "runs the engine itself, so the engine thread is not woken. `keepalive` is held until the handle is "
        "synchronized; `finish(results)` makes synchronize's value (None: `keepalive` is the value).");
  m.def("run", &runNow, py::arg("tensor"),
        "Queue one tensor, run the engine until it completes and return its result (the synchronous ops' path).");
  m.def("allreduce_array_async", &allreduceArrayAsync, py::arg("array"), py::arg("name"), py::arg("reduce_op"),
        py::arg("prescale"), py::arg("postscale"), py::arg("process_set_id"), py::arg("wake"),
        "In-place async allreduce of a writable C-contiguous buffer; synchronize returns the buffer. -1: use "
        "the general path (read-only, non-contiguous or unknown format).");
  m.def("poll", &poll, "True when every tensor of the handle has completed (never blocks).");
  m.def("synchronize", &synchronize, py::arg("handle"),
        "Wait for the handle, release it and return finish(results) (raises the first error).");
  // Calls that take engine locks release the GIL first: a caller driving the engine takes the
  // GIL to run signal handlers while it may hold those locks.
  m.def("process_sets", [] {
    Engine& e = engine();
    py::gil_scoped_release release;
    return e.processSets();
  });
  m.def("start_timeline", [](const std::string& path, bool mark) { raise(engine().startTimeline(path, mark)); });
  m.def("stop_timeline", [] { raise(engine().stopTimeline()); });
  m.def("build_info", &buildInfo);
  m.def("device_info", [](const std::string& nccl_hint) {
    // What the GPU data plane would load, loaded now: the answer --check-build prints.
    py::dict d;
    std::string why;
    const device::CudaLibrary* cuda = device::CudaLibrary::get(&why);
    d["cuda_library"] = cuda ? cuda->path : "";
    d["cuda_error"] = why;
    int gpus = 0;
    if (cuda && !cuda->rt->deviceCount(&gpus).ok()) gpus = 0;
    d["cuda_runtime_devices"] = gpus;
    why.clear();
    const device::NcclLibrary* nccl = device::NcclLibrary::get(nccl_hint, &why);
    d["nccl_library"] = nccl ? nccl->path() : "";
    d["nccl_version"] = nccl ? nccl->version() : 0;
    d["nccl_error"] = why;
    return d;
  }, py::arg("nccl_hint") = "", "Loads liblightcc_cuda.so and NCCL as GPU tensors would, and says what was found.");
  m.def("topk_residuals", [] {
    py::dict out;
    Engine& e = engine();
    std::map<std::string, std::vector<float>> residuals;
    Status st;
    {
      py::gil_scoped_release release;
      st = e.topkResiduals(&residuals);
    }
    raise(st);
    for (auto& [name, values] : residuals) {
      auto buf = std::make_shared<HostBuffer>(values.size() * sizeof(float));
      std::memcpy(buf->data(), values.data(), values.size() * sizeof(float));
      out[py::str(name)] = py::cast(buf);
    }
    return out;
  }, "Copies of the top-k error-feedback residuals (float32 bytes) by tensor name.");
  m.def("set_topk_residual", [](const std::string& name, py::buffer b) {
    py::buffer_info info = b.request();
    if (info.itemsize != 4 || info.format != py::format_descriptor<float>::format()) {
      throw py::value_error("top-k residuals are float32 arrays");
    }
    Engine& e = engine();
    Status st;
    {
      py::gil_scoped_release release;
      st = e.setTopkResidual(name, static_cast<const float*>(info.ptr), static_cast<size_t>(info.size));
    }
    raise(st);
  });
  m.def("stats", [] {
    const EngineStats& s = engine().stats();
    py::dict d;
    d["cycles"] = s.cycles.load();
    d["slow_cycles"] = s.slow_cycles.load();
    d["negotiate_ns"] = s.negotiate_ns.load();
    d["negotiate_wait_ns"] = s.negotiate_wait_ns.load();
    d["execute_ns"] = s.execute_ns.load();
    d["cached_responses"] = s.cached_responses.load();
    d["coordinated_responses"] = s.coordinated_responses.load();
    d["fused_batches"] = s.fused_batches.load();
    d["stream_batches"] = s.stream_batches.load();
    d["streams_busy_max"] = s.streams_busy_max.load();
    d["fusion_flushes"] = s.fusion_flushes.load();
    d["fusion_held"] = s.fusion_held.load();
    d["caller_cycles"] = s.caller_cycles.load();
    d["handoff_waits"] = s.handoff_waits.load();
    d["device_batches"] = s.device_batches.load();
    return d;
  }, "Engine counters: cycles (and how many a waiting caller ran), negotiation and execution time, cached vs coordinated tensors, waits handed off to another thread.");
  m.def("autotune_state", [] {
    const SettingsPtr t = engine().tuning().current();
    py::dict d;
    d["enabled"] = engine().config().autotune;
    d["generation"] = t->generation;
    d["applied_cycle"] = t->applied_cycle;
    d["frozen"] = t->frozen;
    d["fusion_threshold_bytes"] = t->params.fusion_threshold;
    d["cycle_time_ms"] = t->params.cycle_time_ms;
    d["fusion_strategy"] = fusionStrategyName(t->params.strategy);
    d["streams"] = t->params.streams;
    d["two_d"] = t->params.two_d;
    d["topk_threshold_bytes"] = t->params.topk_threshold;
    py::list history;
    for (const auto& [cycle, p] : t->history) {
      history.append(py::make_tuple(cycle, p.fusion_threshold, p.cycle_time_ms, fusionStrategyName(p.strategy),
                                    p.streams, p.two_d, p.topk_threshold));
    }
    d["history"] = history;  // (cycle, threshold, cycle ms, strategy, streams, 2D, top-k threshold) per change
    return d;
  }, "Autotune (HOROVOD_AUTOTUNE): the parameters in force on this rank, their generation, the cycle that applied them (the same on every rank) and whether the search has frozen.");
  m.def("fusion_info", [] {
    const Engine& e = engine();
    const SettingsPtr settings = e.tuning().current();
    const FusionScheduler::Options& o = settings->fusion;
    const CostModel& c = e.tuning().costModel();
    py::dict d;
    d["strategy"] = fusionStrategyName(o.strategy);
    d["threshold_bytes"] = o.threshold;
    d["first_bucket_bytes"] = o.first_bucket;
    d["bucket_bytes"] = o.bucket;
    const bool topk = e.config().topk_allreduce;
    const int64_t t = settings->params.topk_threshold;
    d["topk_threshold_bytes"] = topk && t != std::numeric_limits<int64_t>::max() ? py::cast(t) : py::none();
    if (o.strategy == FusionStrategy::kCost) {
      py::dict m;
      m["ranks"] = c.ranks;
      m["hosts"] = c.hosts;
      m["ranks_per_host"] = c.per_host;
      if (c.shm.present) m["shm"] = py::dict(py::arg("alpha_s") = c.shm.alpha, py::arg("beta_s_per_byte") = c.shm.beta);
      if (c.net.present) m["net"] = py::dict(py::arg("alpha_s") = c.net.alpha, py::arg("beta_s_per_byte") = c.net.beta);
      m["topk_select_s_per_byte"] = c.select_per_byte;
      double a = 0, b = 0;
      c.dense(&a, &b);
      m["allreduce"] = py::dict(py::arg("alpha_s") = a, py::arg("beta_s_per_byte") = b);
      m["probe_ms"] = c.probe_ms;
      d["cost_model"] = m;
    }
    return d;
  }, "Fusion strategy, bucket sizes, top-k threshold and (cost) the fitted alpha-beta model.");
  m.def("flags", [] {
    py::list out;
    for (const auto& f : flagTable()) {
      py::dict d;
      d["name"] = f.name;
      d["type"] = f.type;
      d["default"] = f.default_value;
      d["doc"] = f.doc;
      out.append(d);
    }
    return out;
  });
  m.def("check_config", [] {
    Config c;
    raise(parseConfig(&c));
  });
}
