// outputs.cc: the front's allocator called from the executing thread under the GIL, and the tensors it returns.
#include "bindings/outputs.h"

#include <pybind11/stl.h>

#include <cstring>

#include "device/cuda_device.h"

namespace py = pybind11;

namespace lightcc::bindings {
namespace {

// Past this point no thread may take the GIL (it would hang): lightcc's exit hook has shut the
// engine down before, so only a program that skipped it gets here.
bool pythonGone() {
#if PY_VERSION_HEX >= 0x030D0000
  return !Py_IsInitialized() || Py_IsFinalizing();
#else
  return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

class FrontAllocator : public device::OutputAllocator {
 public:
  FrontAllocator(PyObject* allocate, size_t index, int device, uintptr_t stream)
      : allocate_(allocate), index_(index), device_(device), stream_(stream) {}

  Status allocate(const std::vector<int64_t>& shape, size_t bytes, device::BufferPtr* out,
                  device::EventPtr* ready) override {
    if (pythonGone()) return Status::Aborted("Python is shutting down");
    {
      py::gil_scoped_acquire gil;
      try {
        py::object fn = py::reinterpret_borrow<py::object>(allocate_);
        py::tuple made = fn(index_, shape, bytes);
        py::object tensor = made[0];
        auto address = made[1].cast<uintptr_t>();
        *out = std::make_shared<FrontBuffer>(std::move(tensor), reinterpret_cast<void*>(address), bytes, device_);
      } catch (const std::exception& e) {  // py::error_already_set included: the GIL is still held
        return Status::Internal(std::string("the front's allocator failed: ") + e.what());
      }
    }
    // The framework may reuse memory its (the caller's) stream was still using when the
    // allocation ran: the executor's stream writes after that stream's work up to now.
    if (device_ >= 0) return device::recordOnStream(device_, reinterpret_cast<void*>(stream_), ready);
    return Status::OK();
  }

 private:
  PyObject* allocate_;  // borrowed from the Submission
  size_t index_;
  int device_;
  uintptr_t stream_;
};

}  // namespace

FrontBuffer::~FrontBuffer() {
  if (!tensor_) return;
  if (pythonGone()) {
    tensor_.release();  // the interpreter is going away: leak rather than touch it
    return;
  }
  py::gil_scoped_acquire gil;
  tensor_ = py::object();
}

Status FrontBuffer::download(void* host, size_t bytes) const {
  if (device_ >= 0) return Status::Internal("a framework's GPU output is read by its framework, not the core");
  if (bytes > 0) std::memcpy(host, data_, bytes);
  return Status::OK();
}

Status FrontBuffer::upload(const void* host, size_t bytes) {
  if (device_ >= 0) return Status::Internal("a framework's GPU output is written by the executor's stream only");
  if (bytes > 0) std::memcpy(data_, host, bytes);
  return Status::OK();
}

void attachAllocators(std::vector<TensorEntry>& entries, const std::vector<TensorArgs>& args,
                      const py::object& allocate, bool host_device_executor) {
  if (allocate.is_none()) return;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (args[i].memory.device < 0 && !host_device_executor) continue;  // the host executor's own buffers
    const TensorMemory& m = args[i].memory;
    entries[i].allocate_output = std::make_shared<FrontAllocator>(allocate.ptr(), i, m.device, m.stream);
  }
}

py::object outputObject(const device::BufferPtr& buf) {
  if (auto* front = dynamic_cast<FrontBuffer*>(buf.get())) {
    py::object tensor = front->take();
    return tensor ? tensor : py::none();
  }
  return py::cast(buf);
}

}  // namespace lightcc::bindings
