// CudaDevice: the device interface on one GPU, through the kernels and runtime calls of liblightcc_cuda.so.
#pragma once

#include <memory>

#include "device/cuda_library.h"
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
  size_t topkWorkspaceBytes(size_t count) override { return lib_->topk->workspaceBytes(count); }
  Status selectTopk(const float* values, size_t count, size_t k, uint32_t* indices, float* selected,
                    void* workspace, size_t workspace_bytes) override;
  Status scatterAddRanks(float* dst, size_t count, const std::vector<const uint32_t*>& indices,
                         const std::vector<const void*>& values, DataType dtype, size_t k) override;
  Status accumulateResidual(float* residual, const void* grad, DataType dtype, size_t count,
                            float scale) override;
  Status clearSelected(float* residual, const uint32_t* indices, size_t k) override;
  Status momentumCorrect(float* u, float* v, const void* grad, DataType dtype, size_t count,
                         float momentum) override;
  Status dgcAccumulate(float* u, float* v, const void* grad, DataType dtype, size_t count, float scale,
                       float momentum, bool nesterov) override;
  Status roundSelected(float* residual, const uint32_t* indices, const float* selected, void* wire, DataType dtype,
                       size_t k) override;
  Status fromFloat(void* dst, const float* src, size_t count, DataType dtype) override;
  Status mergeUnion(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val, size_t n,
                    DataType dtype, uint32_t* slot_idx, float* slot_val, float* slot_rank) override;
  Status gatherSlots(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k, DataType dtype,
                     uint32_t* out_idx, void* out_val) override;
  Status markDropped(const uint32_t* list, size_t n, const uint32_t* watched, size_t m, uint8_t* dropped) override;
  Status offsetIndices(uint32_t* idx, size_t n, uint32_t offset) override;
  Status restoreDropped(float* residual, const uint32_t* idx, const void* val, DataType dtype, const uint8_t* dropped,
                        size_t n) override;
  Status placePairs(void* out, size_t count, DataType dtype, const uint32_t* idx, const void* val,
                    size_t n) override;

 protected:
  Status allocate(size_t bytes, BufferPtr* out) override;

 private:
  CudaDevice(const CudaLibrary* lib, int ordinal) : lib_(lib), ordinal_(ordinal) {}
  const CudaLibrary* lib_;
  int ordinal_;
  void* stream_ = nullptr;
};

// An event recorded now on a foreign stream (the caller's; nullptr = legacy default stream)
// of GPU `ordinal`: the engine orders its own work after it.
Status recordOnStream(int ordinal, void* stream, EventPtr* out);
// Orders a foreign stream of GPU `ordinal` after `event`.
Status orderStream(int ordinal, void* stream, const EventPtr& event);

}  // namespace lightcc::device
