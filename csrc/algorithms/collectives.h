// Collective algorithms: shared-memory direct versions for one host, ring versions over Links.
//
// Shared-memory algorithms (every member on this host). Each member copies (a window of) its
// input into its own staging area, members synchronise through per-set counters, then read
// each other's staging directly. Bytes each rank moves for an M-byte allreduce: M copied in,
// M read + M/p written to reduce its 1/p share, M copied out; three barriers per window.
// Results are bit-identical on every member (each element is reduced once, in member order).
//
// Ring algorithms (members on several hosts, or LIGHTCC_FORCE_RING). Bytes each rank sends for
// an M-byte allreduce: 2(p-1)/p * M in 2(p-1) steps (recursive doubling, for small M: log2(p) * M
// in log2(p) steps, +2 where p is not a power of two); allgather and reducescatter (p-1)/p * M;
// broadcast M, pipelined along a chain from the root in chunk-sized pieces; alltoall sends each
// peer its slice directly.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/iovec.h"
#include "algorithms/set_comm.h"
#include "common/dtype.h"

namespace lightcc {

struct ReduceSpec {
  DataType dtype;
  ReduceOp op;
  double prescale;
  double postscale;  // already including 1/size for a floating-point Average
  int64_t int_divisor = 1;  // integer Average: exact division by the set size, after postscale
};

// Shared memory. `on_share`, when given, runs on this member's fully reduced share of each
// window (in its staging, `count` elements) before the others copy it out: the 2D algorithms
// use it to combine shares across hosts.
using ShareHook = std::function<Status(char* share, size_t offset_elems, size_t count)>;
Status shmAllreduce(SetComm& c, const IoVec& io, const ReduceSpec& spec, const ShareHook& on_share = nullptr);
// Output: members' pieces concatenated in member order; piece_bytes per member.
Status shmAllgather(SetComm& c, const void* in, const std::vector<size_t>& piece_bytes, void* out);
Status shmBroadcast(SetComm& c, const void* in, void* out, size_t bytes, int root_member);
// Alltoall runs in two steps so the caller can size the output between them: exchange the
// row counts (every member's send_rows), then the data, received slices in member order.
// Member j receives rows [start_j, start_j + rows_j) of the reduced tensor.
Status shmReducescatter(SetComm& c, const void* in, void* out, const std::vector<int64_t>& rows,
                        size_t row_elems, const ReduceSpec& spec);
// The same with member j's share of this member's input given as shares[j] (its bytes in order,
// wherever they lie); `out` receives this member's share reduced.
Status shmReducescatterShares(SetComm& c, const std::vector<IoVec>& shares, void* out, const ReduceSpec& spec);
using SplitMatrix = std::vector<std::vector<int64_t>>;  // [j][k]: rows member j sends member k
Status shmExchangeSplits(SetComm& c, const std::vector<int64_t>& send_rows, SplitMatrix* matrix);
Status shmAlltoallData(SetComm& c, const void* in, size_t row_bytes, const SplitMatrix& matrix,
                       void* out);

// Links.
Status ringAllreduce(SetComm& c, void* buf, size_t count, const ReduceSpec& spec);
// The same over a fused operation's tensors: large ones are staged chunk by chunk as the pipeline
// reaches them (pipelined_ring.h), small ones through `scratch` as a whole.
Status ringAllreduce(SetComm& c, const IoVec& io, std::vector<char>& scratch, const ReduceSpec& spec);
// Latency-bound sizes (LIGHTCC_RD_ALLREDUCE_BYTES): log2(p) rounds of whole-buffer exchanges,
// with a fold-in/fold-out step for the members beyond the largest power of two (see
// recursive_doubling.cc for the schedule and bytes).
Status recursiveDoublingAllreduce(SetComm& c, void* buf, size_t count, const ReduceSpec& spec);
Status ringAllgather(SetComm& c, const void* in, const std::vector<size_t>& piece_bytes, void* out);
Status chainBroadcast(SetComm& c, void* buf, size_t bytes, int root_member);
Status linkExchangeSplits(SetComm& c, const std::vector<int64_t>& send_rows, SplitMatrix* matrix);
Status linkAlltoallData(SetComm& c, const void* in, size_t row_bytes, const SplitMatrix& matrix,
                        void* out);
// Where each member's block of a reducescatter's input lies: element offsets and counts, and their sum.
struct RowSegments {
  std::vector<size_t> start, len;
  size_t total = 0;
};
RowSegments rowSegments(const std::vector<int64_t>& rows, size_t row_elems);
Status ringReducescatter(SetComm& c, const void* in, void* out, const std::vector<int64_t>& rows,
                         size_t row_elems, const ReduceSpec& spec);
// The same over a scratch input the caller gives up: the ring works in `buf` (no copy of it).
Status ringReducescatterInPlace(SetComm& c, void* buf, void* out, const std::vector<int64_t>& rows,
                                size_t row_elems, const ReduceSpec& spec);

// Rows of a reducescatter per member: dim0 / p each, the first dim0 % p members one more.
std::vector<int64_t> reducescatterRows(int64_t dim0, int members);

}  // namespace lightcc
