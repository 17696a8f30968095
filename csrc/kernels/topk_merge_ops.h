// Per-element arithmetic of gTop-k's pair merge (union by index, ranking, survivors): host and CUDA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/half.h"
#include "kernels/topk_ops.h"

// Shared by the CPU merge (topk_merge.cc, which the host executor and HostDevice run) and
// csrc/cuda/topk_merge.cu, so a merge gives the same bits on either side. The CPU places the
// union's slots (mergeSlotA/B) and the dropped flags (markDropped) by one walk over the sorted
// lists instead of a search per element, with the same slots, values (roundedSum, mergeRank) and
// flags: the searches exist for the device's one-thread-per-element form.
//
// A pair list holds n indices strictly ascending, then n values in the wire dtype W (float,
// Half, BFloat16). Two lists a and b of n pairs merge into 2n "slots" in index order without a
// scan: a[i] lands at slot i + (b's indices below a[i]), b[j] at j + (a's indices up to b[j]),
// so an index present in both fills two adjacent slots, a's first. a's slot holds the sum
// (added in float, rounded once to W: a + b == b + a, so both partners get the same bits); b's
// is empty. Each slot also gets a ranking value for the top-k selection (topk.h): a float
// whose magnitude key is the pair's key + 1 (an empty slot's is 0), so the selection's order —
// larger magnitude first, ties to the lower slot, i.e. the lower index — skips empty slots as
// long as a segment has k real slots (it always does: each list brings k distinct indices).
// The only reordering: the two largest NaN payloads tie.

namespace lightcc::kernels {

static inline LIGHTCC_HD size_t lowerBound(const uint32_t* x, size_t n, uint32_t v) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (x[mid] < v) lo = mid + 1; else hi = mid;
  }
  return lo;
}

static inline LIGHTCC_HD size_t upperBound(const uint32_t* x, size_t n, uint32_t v) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (x[mid] <= v) lo = mid + 1; else hi = mid;
  }
  return lo;
}

static inline LIGHTCC_HD float mergeRank(float v) {
  const uint32_t key = magnitudeKey(v);
  return bitsFloat((key < kMaxKey ? key : kMaxKey - 1) + 1);
}

template <class W>
static inline LIGHTCC_HD float roundedSum(W a, W b) {
  W w;
  storeWire(addRn(toFloat(a), toFloat(b)), &w);
  return toFloat(w);
}

// Slot of a[i]: its value, or the sum with b's equal index.
template <class W>
static inline LIGHTCC_HD void mergeSlotA(size_t i, const uint32_t* a_idx, const W* a_val, const uint32_t* b_idx,
                                         const W* b_val, size_t n, uint32_t* slot_idx, float* slot_val,
                                         float* slot_rank) {
  const size_t j = lowerBound(b_idx, n, a_idx[i]);
  const float v = j < n && b_idx[j] == a_idx[i] ? roundedSum(a_val[i], b_val[j]) : toFloat(a_val[i]);
  slot_idx[i + j] = a_idx[i];
  slot_val[i + j] = v;
  slot_rank[i + j] = mergeRank(v);
}

// Slot of b[j]: its value, or empty where a holds the same index (a's slot has the sum).
template <class W>
static inline LIGHTCC_HD void mergeSlotB(size_t j, const uint32_t* a_idx, const uint32_t* b_idx, const W* b_val,
                                         size_t n, uint32_t* slot_idx, float* slot_val, float* slot_rank) {
  const size_t i = upperBound(a_idx, n, b_idx[j]);
  const bool taken = i > 0 && a_idx[i - 1] == b_idx[j];
  slot_idx[i + j] = b_idx[j];
  slot_val[i + j] = toFloat(b_val[j]);
  slot_rank[i + j] = taken ? 0.0f : mergeRank(toFloat(b_val[j]));
}

// Output pair t of a segment: the slot the selection chose at pos[t] (positions ascend).
template <class W>
static inline LIGHTCC_HD void gatherSlot(size_t t, const uint32_t* pos, const uint32_t* slot_idx,
                                         const float* slot_val, uint32_t* out_idx, W* out_val) {
  out_idx[t] = slot_idx[pos[t]];
  storeWire(slot_val[pos[t]], &out_val[t]);
}

// dropped[i] = 1 once watched[i] is missing from `list` (n ascending indices); never cleared.
static inline LIGHTCC_HD void markDropped(size_t i, const uint32_t* list, size_t n, const uint32_t* watched,
                                          uint8_t* dropped) {
  const size_t j = lowerBound(list, n, watched[i]);
  if (j == n || list[j] != watched[i]) dropped[i] = 1;
}

// A fused batch selects each tensor's pairs in the tensor's own index space; the list carries
// them in the batch's (segments end to end), so the indices stay ascending across segments.
static inline LIGHTCC_HD void offsetIndex(size_t i, uint32_t* idx, uint32_t offset) { idx[i] += offset; }

// Error feedback for what the merges dropped: it reached no one, so it goes back to the residual.
template <class W>
static inline LIGHTCC_HD void restoreDropped(size_t i, float* residual, const uint32_t* idx, const W* val,
                                             const uint8_t* dropped) {
  if (dropped[i]) residual[idx[i]] = addRn(residual[idx[i]], toFloat(val[i]));
}

}  // namespace lightcc::kernels
