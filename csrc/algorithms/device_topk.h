// Device top-k allreduce against device::Device and device::Comm: flat, and 2D (hierarchical).
//
// The same schedule as the host's (hierarchical.h), step for step, so both end bit-identical:
// each rank adds its contribution to the tensor's residual (error feedback; with momentum, DGC's
// momentum correction), selects exactly k = ceil(density * count) entries of largest magnitude,
// zeroes them in the residual (and velocity), allgathers the (index, value) pairs — 8k bytes per
// rank, 8k(p-1) received; 6k for float16/bfloat16 values, which travel in their own dtype while
// the residual keeps their rounding error — and scatter-adds everyone's pairs in rank order
// (in float32, rounded once to the tensor's dtype). Unlike the host's merge
// (sparse_allreduce.h) this exchange grows with p, and takes one tensor a batch. 2D: a dense
// reduce-scatter inside the group, the sparse exchange across groups on the member's own shard
// (8k(n-1) bytes per rank on the network instead of 8k(N-1)), and an allgather inside the group.
// What the step does (dense warm-up, density) comes from topk_schedule.h.
#pragma once

#include <cstddef>

#include "algorithms/collectives.h"
#include "algorithms/hierarchical.h"
#include "device/device.h"

namespace lightcc {

// Device scratch the exchanges grow on demand and reuse step after step (stream order keeps
// one step's use from overlapping the next's).
struct DeviceTopkScratch {
  device::BufferPtr pairs, gathered, workspace, shard;
  device::BufferPtr selected, sum;  // 16-bit values: the float32 selection, the float32 sums
};

// A tensor's error-feedback state in device memory: `padded` floats each (velocity only with
// momentum), padded to the 2D group size.
struct DeviceTopkResidual {
  float* residual = nullptr;
  float* velocity = nullptr;
};

// Flat: out[0, count) = the sum over members of their selections of residual + prescale * in,
// `in` and `out` in `dtype` (float32, float16, bfloat16). `in` may equal `out`.
Status deviceTopkAllreduce(device::Device& dev, device::Comm& comm, DeviceTopkScratch& scratch,
                           const DeviceTopkResidual& state, const void* in, void* out, size_t count, DataType dtype,
                           const ReduceSpec& spec, const TopkParams& params);

// 2D: as the flat one, dense inside `intra`, sparse across `cross`. `work` is scratch of `padded`
// elements of `dtype` (a multiple of intra.size()); `in` and `out` may be `work`.
Status deviceTwoLevelTopkAllreduce(device::Device& dev, device::Comm& intra, device::Comm& cross,
                                   DeviceTopkScratch& scratch, const DeviceTopkResidual& state, const void* in,
                                   void* out, void* work, size_t count, size_t padded, DataType dtype,
                                   const ReduceSpec& spec, const TopkParams& params);

}  // namespace lightcc
