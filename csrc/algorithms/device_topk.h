// Device top-k allreduce against device::Device and device::Comm: flat, and 2D (hierarchical).
//
// The same exchange as the host executor's (sparse_allreduce.h), step for step and through the
// same schedule (topk_merge_schedule.h) and per-element arithmetic (kernels/topk_merge_ops.h), so
// both end bit-identical: each rank adds its contribution to the tensor's residual (error
// feedback; with momentum, DGC's momentum correction), selects exactly k = ceil(density * count)
// entries of largest magnitude, zeroes them in the residual (and velocity) — 16-bit values
// travel in their own dtype, the residual keeping their rounding error — and gTop-k's merge by
// recursive doubling combines the pairs: k(4+w) bytes sent per round, ceil(log2 p) rounds, so a
// rank's traffic grows with log p instead of the (p-1)k(4+w) an allgather receives. Pairs the
// merges dropped return to their rank's residual. A fused batch is one index space cut into
// segments, one per tensor (sparse_allreduce.h's SparseLayout): each segment accumulates with its
// own momentum and keeps its own k, as on the host executor.
// 2D: a dense reduce-scatter inside the group, the sparse exchange across groups on the
// member's own shard, and an allgather inside the group.
// What the step does (dense warm-up, density) comes from topk_schedule.h.
#pragma once

#include <cstddef>

#include "algorithms/collectives.h"
#include "algorithms/hierarchical.h"
#include "algorithms/sparse_allreduce.h"
#include "device/device.h"

namespace lightcc {

// Device scratch the exchanges grow on demand and reuse step after step (stream order keeps
// one step's use from overlapping the next's).
struct DeviceTopkScratch {
  device::BufferPtr lists[4], next;  // the merge's pair lists, by PairRole, and the one it writes
  device::BufferPtr dropped;          // survivor flags of my pairs and of a folded member's
  device::BufferPtr slots, pos;       // a merge's 2n slots; the positions its selection picks
  device::BufferPtr workspace, shard;
  device::BufferPtr selected;  // 16-bit values: the float32 selection
};

// A tensor's error-feedback state in device memory: `padded` floats each (velocity only with
// momentum), padded to the 2D group size.
struct DeviceTopkResidual {
  float* residual = nullptr;
  float* velocity = nullptr;
};

// Each segment's contribution * scale joins the residual (through momentum correction where the
// segment has momentum): sparseAccumulate on the device.
Status deviceSparseAccumulate(device::Device& dev, const SparseLayout& layout, const void* contrib, float scale,
                              const DeviceTopkResidual& state);

// Flat: out[0, layout.count()) = the sum over members of their per-segment selections of
// residual + prescale * in, `in` and `out` in layout.dtype (float32, float16, bfloat16). `in`
// may equal `out`.
Status deviceTopkAllreduce(device::Device& dev, device::Comm& comm, DeviceTopkScratch& scratch,
                           const DeviceTopkResidual& state, const void* in, void* out, const SparseLayout& layout,
                           const ReduceSpec& spec, const TopkParams& params);

// 2D: as the flat one, dense inside `intra`, sparse across `cross` (one segment a shard, at
// params' density and momentum, as the host's hierSparseAllreduce). `work` is scratch of `padded`
// elements of `dtype` (a multiple of intra.size()); `in` and `out` may be `work`.
Status deviceTwoLevelTopkAllreduce(device::Device& dev, device::Comm& intra, device::Comm& cross,
                                   DeviceTopkScratch& scratch, const DeviceTopkResidual& state, const void* in,
                                   void* out, void* work, size_t count, size_t padded, DataType dtype,
                                   const ReduceSpec& spec, const TopkParams& params);

}  // namespace lightcc
