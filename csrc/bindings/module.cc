// lightcc._core: the thin pybind11 edge — addresses in, handle ids out, Status -> exception.
// Each subject binds its own functions: lifecycle.cc, submissions.cc, info.cc, op_spec.cc, codecs.cc.
#include <pybind11/pybind11.h>

#include "bindings/completions.h"
#include "bindings/errors.h"
#include "bindings/state.h"
#include "device/device.h"
#include "engine/handle.h"

namespace py = pybind11;
using namespace lightcc;
using namespace lightcc::bindings;

PYBIND11_MODULE(_core, m) {
  m.doc() = "lightcc C++ core (engine, algorithms, transports). Use the fronts, not this module.";
  // At Python's exit, after lightcc's own hook shut the engine down: the completion thread
  // delivers what is posted and ends, then handles nobody synchronized let go of their objects.
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    Completions::instance().stop();
    dropSubmissions();
  }));
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

  bindLifecycle(m);
  bindSubmissions(m);
  bindInfo(m);
  bindOpSpec(m);
  bindCodecs(m);
}
