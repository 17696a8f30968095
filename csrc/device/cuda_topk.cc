// CudaTopk: the top-k kernels enqueued on one GPU stream through liblightcc_cuda.so's tables.
#include "device/cuda_topk.h"

namespace lightcc::device {

Status CudaTopk::selectTopk(const float* values, size_t count, size_t k, uint32_t* indices, float* selected,
                            void* workspace, size_t workspace_bytes) {
  if (k == 0) return Status::OK();
  return lib_->topk->selectTopk(values, DataType::kFloat32, count, k, indices, selected, workspace,
                                workspace_bytes, stream_);
}

Status CudaTopk::scatterAddRanks(float* dst, size_t count, const std::vector<const uint32_t*>& indices,
                                 const std::vector<const void*>& values, DataType dtype, size_t k) {
  if (k == 0) return Status::OK();
  // Out-of-range indices from a corrupt peer are skipped on the device and counted; the count is
  // not read back here (that would be a host wait on the data path).
  return lib_->topk->scatterAddRanks(dst, count, indices.data(), values.data(), dtype,
                                     static_cast<int>(indices.size()), k, nullptr, stream_);
}

Status CudaTopk::accumulateResidual(float* residual, const void* grad, DataType dtype, size_t count, float scale) {
  if (count == 0) return Status::OK();
  return lib_->topk->accumulateResidual(residual, grad, dtype, count, scale, stream_);
}

Status CudaTopk::clearSelected(float* residual, const uint32_t* indices, size_t k) {
  if (k == 0) return Status::OK();
  return lib_->topk->clearSelected(residual, indices, k, stream_);
}

Status CudaTopk::momentumCorrect(float* u, float* v, const void* grad, DataType dtype, size_t count,
                                 float momentum) {
  if (count == 0) return Status::OK();
  return lib_->topk->momentumCorrect(u, v, grad, dtype, count, momentum, stream_);
}

Status CudaTopk::roundSelected(float* residual, const uint32_t* indices, const float* selected, void* wire,
                               DataType dtype, size_t k) {
  return lib_->topk->roundSelected(residual, indices, selected, wire, dtype, k, stream_);
}

Status CudaTopk::fromFloat(void* dst, const float* src, size_t count, DataType dtype) {
  return lib_->topk->fromFloat(dst, src, count, dtype, stream_);
}

Status CudaTopk::dgcAccumulate(float* u, float* v, const void* grad, DataType dtype, size_t count, float scale,
                               float momentum, bool nesterov) {
  return lib_->train->dgcAccumulate(u, v, grad, dtype, count, scale, momentum, nesterov, stream_);
}

Status CudaTopk::mergeUnion(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val,
                            size_t n, DataType dtype, uint32_t* slot_idx, float* slot_val, float* slot_rank) {
  return lib_->merge->mergeUnion(a_idx, a_val, b_idx, b_val, n, dtype, slot_idx, slot_val, slot_rank, stream_);
}

Status CudaTopk::gatherSlots(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k,
                             DataType dtype, uint32_t* out_idx, void* out_val) {
  return lib_->merge->gatherSlots(slot_idx, slot_val, pos, k, dtype, out_idx, out_val, stream_);
}

Status CudaTopk::markDropped(const uint32_t* list, size_t n, const uint32_t* watched, size_t m, uint8_t* dropped) {
  return lib_->merge->markDropped(list, n, watched, m, dropped, stream_);
}

Status CudaTopk::offsetIndices(uint32_t* idx, size_t n, uint32_t offset) {
  if (n == 0 || offset == 0) return Status::OK();
  return lib_->merge->offsetIndices(idx, n, offset, stream_);
}

Status CudaTopk::restoreDropped(float* residual, const uint32_t* idx, const void* val, DataType dtype,
                                const uint8_t* dropped, size_t n) {
  return lib_->merge->restoreDropped(residual, idx, val, dtype, dropped, n, stream_);
}

Status CudaTopk::placePairs(void* out, size_t count, DataType dtype, const uint32_t* idx, const void* val,
                            size_t n) {
  return lib_->merge->placePairs(out, count, dtype, idx, val, n, stream_);
}

}  // namespace lightcc::device
