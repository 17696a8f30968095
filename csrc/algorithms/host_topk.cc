// HostTopk: the top-k kernels run at once on host memory, the CPU twins of csrc/cuda's.
#include "algorithms/host_topk.h"

#include <string>

#include "kernels/topk_merge.h"
#include "kernels/topk_ops.h"
#include "kernels/topk_train.h"

namespace lightcc::device {

Status HostTopk::selectTopk(const float* values, size_t count, size_t k, uint32_t* indices, float* selected,
                            void*, size_t) {
  if (k > 0) kernels::selectTopk(values, count, k, 0, indices, selected, scratch_);
  return Status::OK();
}

Status HostTopk::scatterAddRanks(float* dst, size_t count, const std::vector<const uint32_t*>& indices,
                                 const std::vector<const void*>& values, DataType dtype, size_t k) {
  if (k == 0) return Status::OK();
  return kernels::scatterAddRanksAny(dst, count, indices.data(), values.data(), dtype, static_cast<int>(indices.size()),
                                     k);
}

Status HostTopk::accumulateResidual(float* residual, const void* grad, DataType dtype, size_t count, float scale) {
  return kernels::accumulateResidualAny(residual, grad, dtype, count, scale);
}

Status HostTopk::clearSelected(float* residual, const uint32_t* indices, size_t k) {
  kernels::clearSelected(residual, indices, k);
  return Status::OK();
}

Status HostTopk::momentumCorrect(float* u, float* v, const void* grad, DataType dtype, size_t count,
                                 float momentum) {
  return kernels::momentumCorrectAny(u, v, grad, dtype, count, momentum);
}

namespace {

// The host twins of csrc/cuda/topk.cu's roundKernel and fromFloatKernel: the same arithmetic.
template <class S>
void roundTo(float* residual, const uint32_t* indices, const float* selected, S* wire, size_t k) {
  for (size_t i = 0; i < k; ++i) {
    kernels::storeWire(selected[i], &wire[i]);
    residual[indices[i]] = kernels::wireRemainder(selected[i], kernels::toFloat(wire[i]));
  }
}

template <class S>
void storeAll(S* dst, const float* src, size_t count) {
  for (size_t i = 0; i < count; ++i) kernels::storeWire(src[i], &dst[i]);
}

}  // namespace

Status HostTopk::roundSelected(float* residual, const uint32_t* indices, const float* selected, void* wire,
                               DataType dtype, size_t k) {
  switch (dtype) {
    case DataType::kFloat32: roundTo(residual, indices, selected, static_cast<float*>(wire), k); break;
    case DataType::kFloat16: roundTo(residual, indices, selected, static_cast<kernels::Half*>(wire), k); break;
    case DataType::kBFloat16: roundTo(residual, indices, selected, static_cast<kernels::BFloat16*>(wire), k); break;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      return Status::InvalidArgument(std::string("top-k values cannot be ") + dtypeName(dtype));
  }
  return Status::OK();
}

Status HostTopk::fromFloat(void* dst, const float* src, size_t count, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: storeAll(static_cast<float*>(dst), src, count); break;
    case DataType::kFloat16: storeAll(static_cast<kernels::Half*>(dst), src, count); break;
    case DataType::kBFloat16: storeAll(static_cast<kernels::BFloat16*>(dst), src, count); break;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      return Status::InvalidArgument(std::string("cannot round float32 to ") + dtypeName(dtype));
  }
  return Status::OK();
}

// The merge's host twins are the host executor's own kernels (kernels/topk_merge.h).
Status HostTopk::dgcAccumulate(float* u, float* v, const void* grad, DataType dtype, size_t count, float scale,
                               float momentum, bool nesterov) {
  return kernels::dgcAccumulate(u, v, grad, dtype, count, scale, momentum, nesterov);
}

Status HostTopk::mergeUnion(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val,
                            size_t n, DataType dtype, uint32_t* slot_idx, float* slot_val, float* slot_rank) {
  return kernels::mergeUnion(a_idx, a_val, b_idx, b_val, n, dtype, slot_idx, slot_val, slot_rank);
}

Status HostTopk::gatherSlots(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k,
                             DataType dtype, uint32_t* out_idx, void* out_val) {
  return kernels::gatherSlots(slot_idx, slot_val, pos, k, dtype, out_idx, out_val);
}

Status HostTopk::markDropped(const uint32_t* list, size_t n, const uint32_t* watched, size_t m, uint8_t* dropped) {
  kernels::markDropped(list, n, watched, m, dropped);
  return Status::OK();
}

Status HostTopk::restoreDropped(float* residual, const uint32_t* idx, const void* val, DataType dtype,
                                const uint8_t* dropped, size_t n) {
  return kernels::restoreDropped(residual, idx, val, dtype, dropped, n);
}

Status HostTopk::offsetIndices(uint32_t* idx, size_t n, uint32_t offset) {
  kernels::offsetIndices(idx, n, offset);
  return Status::OK();
}

Status HostTopk::placePairs(void* out, size_t count, DataType dtype, const uint32_t* idx, const void* val,
                            size_t n) {
  return kernels::placePairs(out, count, dtype, idx, val, n);
}

}  // namespace lightcc::device
