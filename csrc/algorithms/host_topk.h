// HostTopk: the top-k kernels on host memory, run at once with the CPU kernels (HostDevice's topk()).
#pragma once

#include "device/topk_kernels.h"
#include "kernels/topk.h"

namespace lightcc::device {

// Owned by its HostDevice, used by that device's executing thread only.
class HostTopk : public TopkKernels {
 public:
  size_t topkWorkspaceBytes(size_t count) override { return 0; }  // selection uses scratch_
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

 private:
  kernels::TopkScratch scratch_;
};

}  // namespace lightcc::device
