// Two-level (2D) allreduce, allgather and reducescatter, and the per-tensor state and parameters of top-k compression.
//
// 2D (LIGHT_2D_ALLREDUCE). Members form groups of LIGHT_INTRA_SIZE consecutive ranks on one
// host. Steps: (1) shared-memory reduce-scatter inside the group, member j owning share j of
// each staging window; (2) every member allreduces its own share with the members holding the
// same share in the other groups (a ring over their links, so every local rank drives its own
// network flows at once); (3) the group copies all shares out. Bytes over the network per rank
// for M bytes, n groups of g: 2(n-1)/n * M/g, i.e. the host's NIC carries 2(n-1)/n * M.
//
// Top-k (LIGHT_TOPK_ALLREDUCE) runs in sparse_allreduce.h (host) and device_topk.h (device); the
// state and parameters below are shared by both, the TopkStore and the schedule.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/collectives.h"

namespace lightcc {

struct HierComm {
  SetComm intra;  // my group, all on this host
  SetComm cross;  // the members holding the same share in every group
};

Status hierAllreduce(HierComm& h, const IoVec& io, const ReduceSpec& spec);

// 2D allgather, output in member order, bit-identical to ringAllgather's. Groups are g consecutive
// members (mesh.cc), so group G's blocks are one contiguous range of the output. Steps: (1)
// shared-memory allgather of the group's blocks into that range; (2) the range is cut into g byte
// shares, whatever the blocks' sizes, and member j ring-allgathers its share with the members
// holding share j in the other groups, straight into the output; (3) the group copies every
// member's received shares out through shared memory. Bytes over the network per rank for M
// gathered bytes: about (n-1)/n * M/g, so the host's NIC carries (n-1)/n * M on g flows at once,
// in n-1 steps instead of the flat ring's p-1 on one flow. piece_bytes: every member's block.
Status hierAllgather(HierComm& h, const void* in, const std::vector<size_t>& piece_bytes, void* out);

// 2D reducescatter, member j's output block j (rows[j] rows of row_elems). Steps: (1) the input is
// laid out by lane, lane j holding the blocks of members j, g+j, 2g+j, ..., and the group
// reducescatters it in shared memory so member j holds its lane summed over the host; (2) member j
// ring-reducescatters its lane with the members of lane j in the other groups, ending with its own
// block. Bytes over the network per rank for M input bytes: (n-1)/n * M/g, in n-1 steps, against
// the flat ring's (p-1)/p * M in p-1. Sums are added in another order than the flat ring's, so
// floating-point results may differ from it in the last bits (every rank's block is its own).
Status hierReducescatter(HierComm& h, const void* in, void* out, const std::vector<int64_t>& rows,
                         size_t row_elems, const ReduceSpec& spec);

// Host leaders (LIGHTCC_RD_LEADERS), for latency-bound allreduces over a set spread over hosts
// with several members on some. Steps: (1) shared-memory allreduce among this host's members;
// (2) the host's lowest member (its leader) runs recursive doubling with the other hosts'
// leaders; (3) the leader broadcasts the result in the host through shared memory. For H hosts
// a leader sends log2(H) * M bytes (+M when H is not a power of two) in as many rounds; the
// other members send nothing over the network. Flat recursive doubling over all p members
// would put every member on the network for log2(p) rounds.
struct LeaderComm {
  SetComm intra;             // this host's members (unused when shares_hier: the 2D group is the same)
  SetComm leaders;           // the lowest member of each host, ascending; me < 0 on non-leaders
  bool shares_hier = false;  // the set's 2D HierComm exists; its intra owns the same counter slot
};

// `intra` holds this host's members (leader first); `leaders` is only read on the leader.
Status leaderAllreduce(SetComm& intra, SetComm& leaders, const IoVec& io, const ReduceSpec& spec,
                       std::vector<char>& scratch);

// Per-tensor state of top-k compression, owned by the engine thread (and copied out or in,
// under the engine's mutex, when users save or restore it).
struct TopkTensorState {
  std::vector<float> residual;  // what was not sent yet (error feedback)
  std::vector<float> velocity;  // DGC momentum correction, when enabled
  uint64_t steps = 0;
};

struct TopkParams {
  double density = 0.01;
  float momentum = 0.0f;  // 0 = plain error feedback
  bool nesterov = false;  // with momentum: Nesterov's rule (algorithms/topk_schedule.h)
  bool error_feedback = true;  // false: drop what was not sent (biased; for comparisons)
  uint64_t seed = 0;
};

}  // namespace lightcc
