// Sparse (top-k) allreduce with error feedback: gTop-k's merge by recursive doubling, flat and 2D.
//
// A batch is one index space of `count` elements cut into segments, one per fused tensor; segment
// s keeps k_s pairs (K = sum of k_s). Values travel in the batch's dtype (float32, float16 or
// bfloat16: 4 + w bytes a pair, w the value's size), indices as uint32. Steps of one exchange:
//  (1) every member adds its contribution to its residual (error feedback; with momentum, DGC's
//      momentum correction), selects exactly k_s entries of largest magnitude per segment, and
//      keeps in the residual only what rounding the value to the wire dtype lost;
//  (2) fold: with m the largest power of two <= p, member m+j sends its K pairs to member j;
//  (3) log2(m) rounds: member i swaps its K pairs with member i xor 2^t;
//  (4) unfold: member j sends member m+j the final K pairs and which of its pairs survived.
// A merge adds the values of equal indices in float (a + b == b + a, so both partners hold the
// same bits), rounds them to the wire dtype and keeps, per segment, the k_s of largest magnitude
// (ties to the lower index). Every member ends with the same K pairs, bit for bit.
// The merges drop mass; each member puts its own pairs that did not reach the final list back
// into its residual, so the sum of the outputs plus every residual is the sum of every
// contribution (up to the rounding of merged 16-bit sums).
// Bytes a member sends: K(4+w) per round, ceil(log2 p) rounds at most (plus K/8 for the fold's
// survivor bits) — O(K log p), where an allgather of the pairs receives K(4+w)(p-1).
//
// 2D: the group reduces densely in shared memory; the member holding share j of a window runs the
// exchange above with the members holding share j in the other groups, over the share alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/hierarchical.h"
#include "common/dtype.h"
#include "kernels/topk_merge.h"

namespace lightcc {

struct SparseSegment {
  size_t offset = 0;  // first element in the batch's index space
  size_t count = 0;
  size_t k = 0;       // pairs this segment keeps (0 only when count is 0)
  float momentum = 0.0f;  // DGC momentum correction of this segment's tensor (0: plain error feedback)
  bool nesterov = false;
};

// The batch as the exchange sees it: segments in ascending, non-overlapping order.
struct SparseLayout {
  std::vector<SparseSegment> segments;
  DataType dtype = DataType::kFloat32;  // contributions, outputs and values on the wire
  size_t count() const { return segments.empty() ? 0 : segments.back().offset + segments.back().count; }
  size_t pairs() const;
  // Where each segment's k pairs sit in a pair list (segments end to end), for the merge kernels.
  std::vector<kernels::MergeSegment> mergeSegments() const;
};

// A list of n pairs as the wire carries it: n uint32 indices strictly ascending over the
// batch's index space, then n values in the wire dtype.
struct PairBlob {
  std::vector<char> bytes;
  uint32_t* idx() { return reinterpret_cast<uint32_t*>(bytes.data()); }
  char* val(size_t n) { return bytes.data() + 4 * n; }
};

// What one member's exchanges keep between calls. A step of a large model moves tens of MB of
// pairs through these; fresh vectors each step would be fresh pages, faulted in and zeroed by
// the kernel every time (a fifth of the CPU of a top-k step with 8 ranks on 2 cores).
struct SparseScratch {
  kernels::MergeScratch merge;
  PairBlob lists[4];  // by PairRole (topk_merge_schedule.h)
  PairBlob next, msg;
  std::vector<float> values;
  std::vector<uint8_t> mine_dropped, extra_dropped;
};

// One member's error-feedback state over the batch's whole index space (float32; velocity only
// with momentum).
struct SparseState {
  float* residual = nullptr;
  float* velocity = nullptr;
};

// Error feedback of one step: each segment's contribution * scale joins the residual (through
// DGC's momentum correction where the segment has momentum). The exchange starts with this; a
// dense step of tensors with training state uses it alone.
Status sparseAccumulate(const SparseLayout& layout, const void* contrib, float scale, const SparseState& state);

// True for the value dtypes the exchange carries (float32, float16, bfloat16).
bool sparseDtype(DataType dtype);

// Bytes the busiest member sends in one flat exchange of `pairs` pairs over p members.
uint64_t sparseAllreduceBytes(int p, size_t pairs, size_t value_bytes);

// Flat: out = the merged top-k of every member's residual + scale * contrib, zeros elsewhere, in
// layout.dtype. `contrib` may equal `out`. No postscale: the caller applies it.
Status sparseAllreduce(SetComm& comm, const SparseLayout& layout, const void* contrib, float scale, void* out,
                       const SparseState& state, const TopkParams& params, SparseScratch& scratch);

// 2D: `in` reduced densely inside h.intra with spec's prescale, its shares exchanged sparsely
// across h.cross (one segment per share, at `density`), spec's postscale applied at the end.
Status hierSparseAllreduce(HierComm& h, const SparseLayout& layout, const void* in, void* out,
                           const ReduceSpec& spec, const SparseState& state, const TopkParams& params,
                           SparseScratch& scratch);

}  // namespace lightcc
