// CPU kernels of gTop-k's pair merge: one walk over sorted lists where the device searches per element, else loops over topk_merge_ops.h's steps.
#include "kernels/topk_merge.h"

#include <cstring>
#include <string>

#include "kernels/topk_merge_ops.h"

namespace lightcc::kernels {
namespace {

// Runs f(W{}) with W the wire type of `dtype`.
template <class F>
Status withWire(DataType dtype, F f) {
  switch (dtype) {
    case DataType::kFloat32: f(float{}); return Status::OK();
    case DataType::kFloat16: f(Half{}); return Status::OK();
    case DataType::kBFloat16: f(BFloat16{}); return Status::OK();
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      break;
  }
  return Status::InvalidArgument(std::string("top-k pairs cannot carry ") + dtypeName(dtype));
}

}  // namespace

Status mergeUnion(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val, size_t n,
                  DataType dtype, uint32_t* slot_idx, float* slot_val, float* slot_rank) {
  return withWire(dtype, [&](auto w) {
    using W = decltype(w);
    const W* av = static_cast<const W*>(a_val);
    const W* bv = static_cast<const W*>(b_val);
    // One pass over both ascending lists puts every pair in the slot mergeSlotA/B's binary
    // searches give it (a[i] at i + |b below it|, b[j] at j + |a at or below it|), with the same
    // values: the device runs those per element; here the searches' cache misses cost ~140 ns a
    // pair a round, the walk a few.
    size_t i = 0, j = 0;
    while (i < n || j < n) {
      if (j == n || (i < n && a_idx[i] < b_idx[j])) {
        const float v = toFloat(av[i]);
        slot_idx[i + j] = a_idx[i];
        slot_val[i + j] = v;
        slot_rank[i + j] = mergeRank(v);
        ++i;
      } else if (i == n || b_idx[j] < a_idx[i]) {
        const float v = toFloat(bv[j]);
        slot_idx[i + j] = b_idx[j];
        slot_val[i + j] = v;
        slot_rank[i + j] = mergeRank(v);
        ++j;
      } else {  // equal indices: a's slot holds the sum, b's (right after it) is empty
        const float sum = roundedSum(av[i], bv[j]);
        slot_idx[i + j] = a_idx[i];
        slot_val[i + j] = sum;
        slot_rank[i + j] = mergeRank(sum);
        slot_idx[i + j + 1] = b_idx[j];
        slot_val[i + j + 1] = toFloat(bv[j]);
        slot_rank[i + j + 1] = 0.0f;
        ++i;
        ++j;
      }
    }
  });
}

Status gatherSlots(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k, DataType dtype,
                   uint32_t* out_idx, void* out_val) {
  return withWire(dtype, [&](auto w) {
    using W = decltype(w);
    for (size_t t = 0; t < k; ++t) gatherSlot(t, pos, slot_idx, slot_val, out_idx, static_cast<W*>(out_val));
  });
}

Status mergePairs(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val, size_t n,
                  const std::vector<MergeSegment>& segments, DataType dtype, uint32_t* out_idx, void* out_val,
                  MergeScratch& s) {
  s.slot_idx.resize(2 * n);
  s.slot_val.resize(2 * n);
  s.slot_rank.resize(2 * n);
  LIGHTCC_RETURN_IF_ERROR(
      mergeUnion(a_idx, a_val, b_idx, b_val, n, dtype, s.slot_idx.data(), s.slot_val.data(), s.slot_rank.data()));
  const size_t esize = dtypeSize(dtype);
  for (const MergeSegment& seg : segments) {
    if (seg.k == 0) continue;
    s.pos.resize(seg.k);
    s.picked.resize(seg.k);
    selectTopk(s.slot_rank.data() + 2 * seg.at, 2 * seg.k, seg.k, seg.at, s.pos.data(), s.picked.data(), s.select);
    LIGHTCC_RETURN_IF_ERROR(gatherSlots(s.slot_idx.data() + 2 * seg.at, s.slot_val.data() + 2 * seg.at,
                                        s.pos.data(), seg.k, dtype, out_idx + seg.at,
                                        static_cast<char*>(out_val) + seg.at * esize));
  }
  return Status::OK();
}

void markDropped(const uint32_t* list, size_t n, const uint32_t* watched, size_t m, uint8_t* dropped) {
  // Both ascending: one walk instead of a binary search per watched pair (as in mergeUnion).
  size_t j = 0;
  for (size_t i = 0; i < m; ++i) {
    while (j < n && list[j] < watched[i]) ++j;
    if (j == n || list[j] != watched[i]) dropped[i] = 1;
  }
}

void offsetIndices(uint32_t* idx, size_t n, uint32_t offset) {
  for (size_t i = 0; i < n; ++i) offsetIndex(i, idx, offset);
}

Status restoreDropped(float* residual, const uint32_t* idx, const void* val, DataType dtype, const uint8_t* dropped,
                      size_t n) {
  return withWire(dtype, [&](auto w) {
    using W = decltype(w);
    for (size_t i = 0; i < n; ++i) restoreDropped(i, residual, idx, static_cast<const W*>(val), dropped);
  });
}

Status placePairs(void* out, size_t count, DataType dtype, const uint32_t* idx, const void* val, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (idx[i] >= count) {
      return Status::PeerFailure("top-k pair " + std::to_string(i) + " has index " + std::to_string(idx[i]) +
                                 " beyond the " + std::to_string(count) + " elements");
    }
  }
  const size_t esize = dtypeSize(dtype);
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(static_cast<char*>(out) + idx[i] * esize, static_cast<const char*>(val) + i * esize, esize);
  }
  return Status::OK();
}

Status checkPairs(const uint32_t* idx, size_t n, size_t count, int peer) {
  for (size_t i = 0; i < n; ++i) {
    if (idx[i] >= count || (i > 0 && idx[i] <= idx[i - 1])) {
      return Status::PeerFailure("rank " + std::to_string(peer) + " sent top-k pair " + std::to_string(i) +
                                 " with index " + std::to_string(idx[i]) + " (" + std::to_string(count) +
                                 " elements, indices must ascend)");
    }
  }
  return Status::OK();
}

}  // namespace lightcc::kernels
