// submissions.cc: tensors in (submit, run, the NumPy fast path), handles out (poll, synchronize).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>

#include "bindings/casters.h"
#include "bindings/completions.h"
#include "bindings/errors.h"
#include "bindings/outputs.h"
#include "bindings/state.h"
#include "bindings/tensor_args.h"
#include "common/interrupt.h"
#include "device/cuda_device.h"
#include "engine/topk_store.h"

namespace py = pybind11;

namespace lightcc::bindings {
namespace {

// Fills `entry` from the front's arguments; reusing an entry reuses its strings' and vectors'
// capacity (the direct path's per-thread scratch entry allocates nothing per call).
void fillEntry(const TensorArgs& t, TensorEntry* entry) {
  if (!isOpCode(t.op)) throw py::value_error("unknown op code " + std::to_string(t.op));
  if (!isValidDataType(t.dtype)) throw py::value_error("unsupported dtype code " + std::to_string(t.dtype));
  if (!isValidReduceOp(t.reduce_op)) throw py::value_error("unknown reduce op " + std::to_string(t.reduce_op));
  Request& r = entry->request;
  r.op = static_cast<OpType>(t.op);
  r.name = t.name;
  r.dtype = static_cast<DataType>(t.dtype);
  r.shape = t.shape;
  r.reduce_op = static_cast<ReduceOp>(t.reduce_op);
  r.root = t.root;
  r.prescale = t.prescale;
  r.postscale = t.postscale;
  r.process_set_id = t.process_set_id;
  r.aux = t.aux;
  r.device = t.memory.device < 0 ? -1 : t.memory.device;
  entry->input = reinterpret_cast<const void*>(t.memory.input);
  entry->output = reinterpret_cast<void*>(t.memory.output);
}

TensorEntry makeEntry(const TensorArgs& t) {
  TensorEntry entry;
  fillEntry(t, &entry);
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
    const TensorArgs& t = args[i];
    if (!needsReadyEvent(t)) continue;
    if (!event || t.memory.device != device || t.memory.stream != stream) {
      raise(device::recordOnStream(t.memory.device, reinterpret_cast<void*>(t.memory.stream), &event));
      device = t.memory.device;
      stream = t.memory.stream;
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
  py::object buf = r.output ? py::cast(r.output) : r.device_output ? outputObject(r.device_output) : py::none();
  return py::make_tuple(buf, r.output_shape, r.received_splits, r.value);
}

// enqueue + wait for one tensor, without a handle id: the synchronous ops' path, where the
// front's handle bookkeeping cost more than the engine's own work for a small tensor.
std::shared_ptr<Handle> runToCompletion(const TensorArgs& t) {
  std::shared_ptr<Engine> e = state().engine;
  if (!e) throw py::value_error("lightcc has not been initialized; use hvd.init().");
  Status st;
  bool done = false;
  {
    // A direct step first (one-host allreduces and barriers): no handle, no queue.
    thread_local TensorEntry scratch;
    fillEntry(t, &scratch);
    py::gil_scoped_release release;
    ScopedInterruptCheck signals(&pythonSignalRaised);
    st = e->runDirect(scratch, &done);
  }
  if (done || !st.ok()) {
    raisePendingSignal();
    raise(st);
    static const std::shared_ptr<Handle> completed = [] {
      auto h = std::make_shared<Handle>();
      h->complete(Status::OK());
      return h;
    }();
    return completed;  // the empty result the engine gives both: the output is the caller's buffer
  }
  std::vector<TensorEntry> entries;
  entries.push_back(makeEntry(t));
  markReady(entries, {t});
  std::shared_ptr<Handle> h = entries.back().handle;
  h->addWaiter(1);  // with the GIL held, so the engine cannot be shut down under us
  {
    py::gil_scoped_release release;
    ScopedInterruptCheck signals(&pythonSignalRaised);
    st = e->enqueue(std::move(entries), /*wake=*/false);
    if (st.ok()) {
      e->nudgeFusion();
      st = e->wait(*h);
    }
  }
  h->addWaiter(-1);
  raisePendingSignal();
  raise(st);
  orderCallerStream(t.memory.device, t.memory.stream, {h});
  return h;
}

py::tuple runNow(const TensorArgs& t) { return resultTuple(*runToCompletion(t)); }

// Queues one tensor or a group and registers it; returns the front-level handle id. With
// `on_done`, the completion thread calls on_done(id) once every tensor has completed.
int64_t submit(const std::vector<TensorArgs>& tensors, bool wake, py::object keepalive, py::object finish,
               py::object allocate, py::object on_done) {
  Engine& e = engine();
  std::vector<TensorEntry> entries;
  Submission sub;
  for (const auto& t : tensors) {
    entries.push_back(makeEntry(t));
    sub.handles.push_back(entries.back().handle);
  }
  markReady(entries, tensors);
  attachAllocators(entries, tensors, allocate, e.config().device.executor_on_host);
  const bool notify = !on_done.is_none();
  sub.keepalive = std::move(keepalive);
  sub.finish = std::move(finish);
  sub.allocate = std::move(allocate);  // its allocators borrow it until the handles complete
  sub.on_done = std::move(on_done);
  if (!tensors.empty()) {
    sub.device = tensors.front().memory.device;
    sub.stream = tensors.front().memory.stream;
  }
  // In the registry before the engine sees it: a completion posted while the GIL is released
  // below must find it.
  int64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    id = state().next_handle++;
    state().submissions.emplace(id, std::move(sub));
  }
  if (notify) {
    auto left = std::make_shared<std::atomic<size_t>>(entries.size());
    if (entries.empty()) Completions::instance().post(id);
    for (auto& entry : entries) {
      entry.handle->onComplete([left, id] {
        if (left->fetch_sub(1) == 1) Completions::instance().post(id);
      });
    }
  }
  Status st;
  {
    py::gil_scoped_release release;
    st = e.enqueue(std::move(entries), wake);
  }
  if (!st.ok()) {
    Submission dropped;  // released after the lock, with the GIL held
    std::lock_guard<std::mutex> lock(state().mu);
    auto it = state().submissions.find(id);
    if (it != state().submissions.end()) {
      dropped = std::move(it->second);
      state().submissions.erase(it);
    }
  }
  raise(st);
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
// The in-place allreduce of a writable C-contiguous buffer as core arguments; false (and `t`
// unset) for arrays the general path must handle.
bool inPlaceAllreduceArgs(py::handle array, const std::string& name, int reduce_op, double pre, double post,
                          int set_id, TensorArgs* t) {
  Py_buffer view;
  if (PyObject_GetBuffer(array.ptr(), &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    return false;
  }
  t->dtype = formatCode(view.format, view.itemsize);
  t->shape.assign(view.shape, view.shape + view.ndim);
  t->memory.input = t->memory.output = reinterpret_cast<uintptr_t>(view.buf);
  PyBuffer_Release(&view);
  if (t->dtype < 0) return false;
  t->op = static_cast<int>(OpType::kAllreduce);
  t->name = name;
  t->reduce_op = reduce_op;
  t->prescale = pre;
  t->postscale = post;
  t->process_set_id = set_id;
  return true;
}

int64_t allreduceArrayAsync(py::handle array, const std::string& name, int reduce_op, double pre, double post,
                            int set_id, bool wake) {
  engine();  // ValueError before init, as every other call
  TensorArgs t;
  if (!inPlaceAllreduceArgs(array, name, reduce_op, pre, post, set_id, &t)) return -1;
  return submit({t}, wake, py::reinterpret_borrow<py::object>(array), py::none(), py::none(), py::none());
}

// The synchronous form (hvd.allreduce_ on a NumPy array): the whole call in C++, which for a
// small tensor saves the front's argument building, several microseconds of Python per call.
// False: nothing ran, the general path must handle the array.
bool allreduceArray(py::handle array, const std::string& name, int reduce_op, double pre, double post,
                    int set_id) {
  engine();
  thread_local TensorArgs t;  // reused: its name and shape keep their capacity
  if (!inPlaceAllreduceArgs(array, name, reduce_op, pre, post, set_id, &t)) return false;
  runToCompletion(t);  // the caller's reference keeps the array alive throughout
  return true;
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

// Removes a submission from the registry; ValueError for an id not (or no longer) there.
Submission take(int64_t id) {
  std::lock_guard<std::mutex> lock(state().mu);
  auto it = state().submissions.find(id);
  if (it == state().submissions.end()) {
    throw py::value_error("handle " + std::to_string(id) + " was not created or has already been synchronized");
  }
  Submission sub = std::move(it->second);
  state().submissions.erase(it);
  return sub;
}

// Waits for every tensor of a submission, unregisters it and returns the front's value (the
// first error is raised once all have completed; the buffers are released only then).
py::object synchronize(int64_t id) {
  Submission sub = take(id);
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

}  // namespace

void bindSubmissions(py::module_& m) {
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
        py::arg("allocate") = py::none(), py::arg("on_done") = py::none(),
        "Queue tensors (one group) and return one handle id. wake=False: the caller synchronizes at once and "
        "runs the engine itself, so the engine thread is not woken. `keepalive` is held until the handle is "
        "synchronized; `finish(results)` makes synchronize's value (None: `keepalive` is the value). "
        "`allocate(index, shape, nbytes) -> (tensor, address)` makes the outputs a device executor sizes "
        "(allgather, alltoall, reducescatter) with the tensor's framework; the result carries that tensor. "
        "`on_done(id)` is called on lightcc's completion thread once every tensor has completed (futures).");
  m.def("run", &runNow, py::arg("tensor"),
        "Queue one tensor, run the engine until it completes and return its result (the synchronous ops' path).");
  m.def("allreduce_array", &allreduceArray, py::arg("array"), py::arg("name"), py::arg("reduce_op"),
        py::arg("prescale"), py::arg("postscale"), py::arg("process_set_id"),
        "In-place synchronous allreduce of a writable C-contiguous buffer. False: nothing ran; use the general "
        "path (read-only, non-contiguous or unknown format).");
  m.def("allreduce_array_async", &allreduceArrayAsync, py::arg("array"), py::arg("name"), py::arg("reduce_op"),
        py::arg("prescale"), py::arg("postscale"), py::arg("process_set_id"), py::arg("wake"),
        "In-place async allreduce of a writable C-contiguous buffer; synchronize returns the buffer. -1: use "
        "the general path (read-only, non-contiguous or unknown format).");
  m.def(
      "topk_declare",
      [](int32_t set, const std::string& name, bool sgd, double momentum, bool nesterov) {
        if (!(momentum >= 0.0 && momentum < 1.0)) {
          throw py::value_error("top-k declaration of '" + name + "': momentum must be in [0, 1), got " +
                                std::to_string(momentum));
        }
        TopkTensorOptions options;
        options.sgd = sgd;
        options.momentum = static_cast<float>(momentum);
        options.nesterov = nesterov;
        engine().topkStore().declare(set, name, options);
      },
      py::arg("process_set_id"), py::arg("name"), py::arg("sgd"), py::arg("momentum"), py::arg("nesterov"),
      "Declare a host tensor's optimizer for top-k (DGC momentum correction; algorithms/topk_schedule.h).");
  m.def(
      "topk_progress",
      [](int32_t set, const std::string& name) {
        const TopkStore::Progress p = engine().topkStore().progress(set, name);
        return py::make_tuple(p.steps, p.momentum, p.clipped);
      },
      py::arg("process_set_id"), py::arg("name"),
      "(top-k steps taken, momentum correction of the last one, steps clipped) of a host tensor.");
  m.def("poll", &poll, "True when every tensor of the handle has completed (never blocks).");
  m.def("synchronize", &synchronize, py::arg("handle"),
        "Wait for the handle, release it and return finish(results) (raises the first error).");
}

}  // namespace lightcc::bindings
