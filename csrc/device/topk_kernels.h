// TopkKernels: the sparse-allreduce kernels a device runs on its stream, the top-k algorithms' side of a Device.
//
// The top-k schedules (algorithms/device_topk.h) select, merge and scatter index/value pairs;
// the fusion buffer and the dense schedules never do. So these kernels are an interface of their
// own, handed out by Device::topk() and enqueued on that Device's stream (the host twin simply
// runs them). Semantics are csrc/kernels' bit for bit; pointers are device memory unless a
// comment says host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

namespace lightcc::device {

class TopkKernels {
 public:
  virtual ~TopkKernels() = default;

  // Top-k (kernels/topk.h semantics: exact k largest |v|, ties to the lowest index).
  virtual size_t topkWorkspaceBytes(size_t count) = 0;
  virtual Status selectTopk(const float* values, size_t count, size_t k, uint32_t* indices, float* selected,
                            void* workspace, size_t workspace_bytes) = 0;
  // dst = sum over ranks (in rank order) of each rank's k pairs, values in `dtype` (float32,
  // float16, bfloat16); dst is zeroed first by the caller. `indices`/`values`: HOST arrays of
  // device pointers.
  virtual Status scatterAddRanks(float* dst, size_t count, const std::vector<const uint32_t*>& indices,
                                 const std::vector<const void*>& values, DataType dtype, size_t k) = 0;
  // Gradients (`grad`) in float32, float16 or bfloat16; residuals and velocities in float32.
  virtual Status accumulateResidual(float* residual, const void* grad, DataType dtype, size_t count,
                                    float scale) = 0;
  virtual Status clearSelected(float* residual, const uint32_t* indices, size_t k) = 0;
  virtual Status momentumCorrect(float* u, float* v, const void* grad, DataType dtype, size_t count,
                                 float momentum) = 0;
  // DGC's momentum correction with the gradient scaled, plain or Nesterov (kernels::dgcAccumulate).
  virtual Status dgcAccumulate(float* u, float* v, const void* grad, DataType dtype, size_t count, float scale,
                               float momentum, bool nesterov) = 0;
  // 16-bit values on the wire: wire[i] = selected[i] rounded to `dtype`, and the residual at
  // indices[i] keeps what the rounding lost (kernels::wireRemainder).
  virtual Status roundSelected(float* residual, const uint32_t* indices, const float* selected, void* wire,
                               DataType dtype, size_t k) = 0;
  // dst (count elements of `dtype`) = src rounded to nearest even.
  virtual Status fromFloat(void* dst, const float* src, size_t count, DataType dtype) = 0;

  // gTop-k's pair merge (kernels/topk_merge.h semantics, bit for bit). A pair list is n uint32
  // indices ascending, then n values in `dtype`. mergeUnion fills 2n slots; selectTopk over a
  // segment's slot_rank picks the positions gatherSlots turns back into pairs.
  virtual Status mergeUnion(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val,
                            size_t n, DataType dtype, uint32_t* slot_idx, float* slot_val, float* slot_rank) = 0;
  virtual Status gatherSlots(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k,
                             DataType dtype, uint32_t* out_idx, void* out_val) = 0;
  // dropped[i] = 1 where watched[i] is not among list's n indices (m watched; never cleared).
  virtual Status markDropped(const uint32_t* list, size_t n, const uint32_t* watched, size_t m,
                             uint8_t* dropped) = 0;
  // idx[i] += offset for i < n: a fused batch's per-tensor selection into the batch's index space.
  virtual Status offsetIndices(uint32_t* idx, size_t n, uint32_t offset) = 0;
  // residual[idx[i]] += val[i] where dropped[i].
  virtual Status restoreDropped(float* residual, const uint32_t* idx, const void* val, DataType dtype,
                                const uint8_t* dropped, size_t n) = 0;
  // out[idx[i]] = val[i], out (count elements of `dtype`) zeroed by the caller. An index >= count
  // (a corrupt peer) is an error where the device can tell at once, else skipped.
  virtual Status placePairs(void* out, size_t count, DataType dtype, const uint32_t* idx, const void* val,
                            size_t n) = 0;
};

}  // namespace lightcc::device
