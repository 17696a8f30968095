// Host launchers for the CUDA kernels of gTop-k's pair merge: union, gather, survivors, restore, place.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

// As topk_cuda.h: in liblightcc_cuda.so, reached through the extern "C" table below; each
// launcher enqueues on `stream` and returns without waiting; pointers are device pointers.
// Semantics and arithmetic: csrc/kernels/topk_merge.h / topk_merge_ops.h (one thread an
// element, binary searches instead of a scan, so no host synchronisation). Values travel in
// float32, float16 or bfloat16 (kInvalidArgument for other dtypes).

namespace lightcc::cuda {

Status mergeUnionCuda(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val, size_t n,
                      DataType dtype, uint32_t* slot_idx, float* slot_val, float* slot_rank, void* stream);
Status gatherSlotsCuda(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k,
                       DataType dtype, uint32_t* out_idx, void* out_val, void* stream);
Status markDroppedCuda(const uint32_t* list, size_t n, const uint32_t* watched, size_t m, uint8_t* dropped,
                       void* stream);
Status restoreDroppedCuda(float* residual, const uint32_t* idx, const void* val, DataType dtype,
                          const uint8_t* dropped, size_t n, void* stream);
// An index >= count (a corrupt peer) is skipped: the device cannot report it without a sync.
Status placePairsCuda(void* out, size_t count, DataType dtype, const uint32_t* idx, const void* val, size_t n,
                      void* stream);

// idx[i] += offset, i < n (a fused batch's per-tensor selections into the batch's index space).
Status offsetIndicesCuda(uint32_t* idx, size_t n, uint32_t offset, void* stream);

struct CudaMergeTableV1 {
  int version;  // 2 (added offsetIndices; the core checks the version)
  Status (*mergeUnion)(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val, size_t n,
                       DataType dtype, uint32_t* slot_idx, float* slot_val, float* slot_rank, void* stream);
  Status (*gatherSlots)(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k,
                        DataType dtype, uint32_t* out_idx, void* out_val, void* stream);
  Status (*markDropped)(const uint32_t* list, size_t n, const uint32_t* watched, size_t m, uint8_t* dropped,
                        void* stream);
  Status (*restoreDropped)(float* residual, const uint32_t* idx, const void* val, DataType dtype,
                           const uint8_t* dropped, size_t n, void* stream);
  Status (*placePairs)(void* out, size_t count, DataType dtype, const uint32_t* idx, const void* val, size_t n,
                       void* stream);
  Status (*offsetIndices)(uint32_t* idx, size_t n, uint32_t offset, void* stream);
};

}  // namespace lightcc::cuda

extern "C" const lightcc::cuda::CudaMergeTableV1* lightccCudaMergeTableV1();
