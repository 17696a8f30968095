// outputs.h: device outputs made by the front's framework allocator, asked for by the device executor once their size is agreed.
//
// DESIGN. A submission may carry `allocate(index, shape, nbytes) -> (tensor, address)`: torch's
// caching allocator, CuPy's pool, NumPy or TensorFlow behind it (lightcc/common/ops.py). Each of
// its tensors gets a FrontAllocator, which the thread executing the batch (the engine's, a stream
// worker, or a caller driving the engine with the GIL released) calls for an output whose size
// only the collective knows (allgather, alltoall) or that the executor sizes (reducescatter).
// The call takes the GIL for its own length only. It cannot deadlock: no thread holds the GIL
// while it waits for the engine (waits, enqueue, shutdown and the info calls that take engine
// locks release it first), the rule the driving caller's signal check already relies on. The
// callable is borrowed: the Submission owns it and lives until synchronize has seen every handle
// complete, and nothing calls it after its handle completed. The tensor travels in the handle's
// result as a FrontBuffer, which synchronize hands to the front's finish step as it is.
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "bindings/tensor_args.h"
#include "device/device.h"
#include "engine/tensor_queue.h"

namespace lightcc::bindings {

// A framework's tensor, seen by the core as device memory; released under the GIL.
class FrontBuffer : public device::Buffer {
 public:
  FrontBuffer(pybind11::object tensor, void* data, size_t size, int device)
      : tensor_(std::move(tensor)), data_(data), size_(size), device_(device) {}
  ~FrontBuffer() override;
  void* data() const override { return data_; }
  size_t size() const override { return size_; }
  int device() const override { return device_; }
  // Outputs are read by their framework, never downloaded by the core (only residuals are).
  Status download(void* host, size_t bytes) const override;
  Status upload(const void* host, size_t bytes) override;
  // The tensor, handed over once with the GIL held (synchronize): the buffer, which the engine
  // may release last, then dies without taking the GIL.
  pybind11::object take() const { return std::move(tensor_); }

 private:
  mutable pybind11::object tensor_;
  void* data_;
  size_t size_;
  int device_;
};

// Gives each entry that a device executor may run (a GPU tensor, or any tensor under
// LIGHTCC_DEVICE_EXECUTOR=host) an allocator calling `allocate` (borrowed; None: none).
void attachAllocators(std::vector<TensorEntry>& entries, const std::vector<TensorArgs>& args,
                      const pybind11::object& allocate, bool host_device_executor);

// The value a result tuple carries for `buf`: a FrontBuffer's tensor (taken), else the buffer itself.
pybind11::object outputObject(const device::BufferPtr& buf);

}  // namespace lightcc::bindings
