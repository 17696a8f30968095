// Device allreduce schedules against device::Comm: the flat call, the 2D (two-level) one, and the scaling after.
//
// Flat: one allreduce of `count` elements over the set's communicator (NCCL picks ring or tree).
// 2D (LIGHT_2D_ALLREDUCE): the set splits into groups of g consecutive members (one host each)
// and the cross communicators of the members holding the same shard. Steps: (1) reduce-scatter
// inside the group, so member j of the group owns shard j (padded/g elements); (2) allreduce of
// that shard across the n groups; (3) allgather of the shards inside the group. Bytes each rank
// puts on the network for M bytes: 2(n-1)/n * M/g, so the host's NIC carries 2(n-1)/n * M, with
// every local rank driving its own flows. The buffer must hold `padded` elements, a multiple of g,
// zero beyond the data.
#pragma once

#include <cstddef>

#include "algorithms/collectives.h"
#include "device/device.h"

namespace lightcc {

// Scales and integer division after a Sum, as the host algorithms apply them.
Status deviceFinishScaling(device::Device& dev, void* buf, size_t count, DataType dtype, const ReduceSpec& spec);

// 2D allreduce of `buf` (`padded` elements, a multiple of intra.size()) with element-wise `op`;
// `shard` is scratch of padded / intra.size() elements.
Status deviceTwoLevelAllreduce(device::Comm& intra, device::Comm& cross, void* buf, void* shard, size_t padded,
                               DataType dtype, ReduceOp op);

}  // namespace lightcc
