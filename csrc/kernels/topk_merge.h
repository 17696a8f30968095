// CPU kernels of gTop-k's pair merge: union by index, per-segment re-selection, survivors, dense output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"
#include "kernels/topk.h"

// The arithmetic is topk_merge_ops.h's, shared with csrc/cuda/topk_merge.cu. A pair list is n
// uint32 indices strictly ascending, then n values in the wire dtype (float32, float16 or
// bfloat16); `dtype` below is that dtype (kInvalidArgument for any other).

namespace lightcc::kernels {

// One segment of a merged list: its pairs sit at [at, at + k) of every list, its slots at
// [2 at, 2 (at + k)).
struct MergeSegment {
  size_t at = 0;
  size_t k = 0;
};

// Reusable slot buffers for mergePairs (grown on demand, never shrunk).
struct MergeScratch {
  std::vector<uint32_t> slot_idx, pos;
  std::vector<float> slot_val, slot_rank, picked;
  TopkScratch select;
};

// Union of a and b (n pairs each) into 2n slots: slot_idx, slot_val (float, exact in dtype),
// slot_rank (what selectTopk ranks).
Status mergeUnion(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val, size_t n,
                  DataType dtype, uint32_t* slot_idx, float* slot_val, float* slot_rank);
// The k slots selectTopk chose at `pos` (ascending) as pairs.
Status gatherSlots(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k, DataType dtype,
                   uint32_t* out_idx, void* out_val);
// out (n pairs) = per segment the k largest of the union of a and b. out must not alias a or b.
Status mergePairs(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val, size_t n,
                  const std::vector<MergeSegment>& segments, DataType dtype, uint32_t* out_idx, void* out_val,
                  MergeScratch& scratch);

// dropped[i] = 1 where watched[i] is not among list's n indices (m watched).
void markDropped(const uint32_t* list, size_t n, const uint32_t* watched, size_t m, uint8_t* dropped);
// idx[i] += offset for i < n (kernels::offsetIndex).
void offsetIndices(uint32_t* idx, size_t n, uint32_t offset);
// residual[idx[i]] += val[i] where dropped[i].
Status restoreDropped(float* residual, const uint32_t* idx, const void* val, DataType dtype, const uint8_t* dropped,
                      size_t n);
// out[idx[i]] = val[i] (out in dtype, zeroed by the caller); kPeerFailure for an index >= count.
Status placePairs(void* out, size_t count, DataType dtype, const uint32_t* idx, const void* val, size_t n);
// kPeerFailure naming `peer` unless the n indices ascend strictly below count.
Status checkPairs(const uint32_t* idx, size_t n, size_t count, int peer);

}  // namespace lightcc::kernels
