// CudaDevice: the device interface on one GPU, through the kernels and runtime calls of liblightcc_cuda.so.
// Its top-k kernels are CudaTopk (cuda_topk.h), on the same stream.
#pragma once

#include <memory>

#include "device/cuda_library.h"
#include "device/cuda_topk.h"
#include "device/device.h"

namespace lightcc::device {

class CudaDevice : public Device {
 public:
  // Makes this executor's own (non-blocking) stream on GPU `ordinal`.
  static Status create(int ordinal, std::unique_ptr<CudaDevice>* out);
  ~CudaDevice() override;

  std::string describe() const override { return "cuda:" + std::to_string(ordinal_); }
  int ordinal() const override { return ordinal_; }
  void* stream() const { return stream_; }
  // Makes `ordinal` the calling thread's current device (the driving thread can change).
  Status activate() const;

  Status waitFor(const EventPtr& event) override;
  Status record(EventPtr* out) override;
  Status copy(void* dst, const void* src, size_t bytes) override;
  Status zero(void* dst, size_t bytes) override;
  Status pack(void* buffer, const std::vector<Segment>& segments) override;
  Status unpack(const void* buffer, const std::vector<Segment>& segments) override;
  Status scale(void* dst, const void* src, size_t count, DataType dtype, double factor) override;
  Status divideIntegers(void* data, size_t count, DataType dtype, int64_t divisor) override;
  TopkKernels& topk() override { return topk_; }

 protected:
  Status allocate(size_t bytes, BufferPtr* out) override;

 private:
  CudaDevice(const CudaLibrary* lib, int ordinal) : lib_(lib), ordinal_(ordinal) {}
  const CudaLibrary* lib_;
  int ordinal_;
  void* stream_ = nullptr;
  CudaTopk topk_{nullptr, nullptr};  // on stream_, once create() has made it
};

// An event recorded now on a foreign stream (the caller's; nullptr = legacy default stream)
// of GPU `ordinal`: the engine orders its own work after it.
Status recordOnStream(int ordinal, void* stream, EventPtr* out);
// Orders a foreign stream of GPU `ordinal` after `event`.
Status orderStream(int ordinal, void* stream, const EventPtr& event);

}  // namespace lightcc::device
