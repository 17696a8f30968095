// Sparse allreduce: local selection, the recursive-doubling merge of (index, value) pairs, error feedback.
#include "algorithms/sparse_allreduce.h"

#include "algorithms/topk_merge_schedule.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/half.h"
#include "kernels/reduce.h"
#include "kernels/topk_merge.h"
#include "kernels/topk_ops.h"
#include "kernels/topk_train.h"

namespace lightcc {
namespace {

float roundToWire(float v, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16: return kernels::halfToFloat(kernels::floatToHalf(v));
    case DataType::kBFloat16: return kernels::bf16ToFloat(kernels::floatToBf16(v));
    case DataType::kFloat32: return v;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      break;  // not a top-k wire type: sparseDtype() keeps them off this path
  }
  return v;
}

// Adds the contribution into the residual and selects this member's pairs per segment into
// `mine`; the residual keeps what rounding the values to the wire dtype lost.
Status selectLocal(const SparseLayout& layout, const void* contrib, float scale, const SparseState& state,
                   const TopkParams& params, kernels::TopkScratch& scratch, std::vector<float>& val,
                   PairBlob* mine) {
  const size_t count = layout.count(), n = layout.pairs();
  LIGHTCC_RETURN_IF_ERROR(sparseAccumulate(layout, contrib, scale, state));
  mine->bytes.resize(n * (4 + dtypeSize(layout.dtype)));
  uint32_t* idx = mine->idx();
  val.resize(n);
  size_t at = 0;
  for (const SparseSegment& s : layout.segments) {
    if (s.k == 0) continue;
    kernels::selectTopk(state.residual + s.offset, s.count, s.k, params.seed + s.offset, &idx[at], &val[at], scratch);
    for (size_t i = at; i < at + s.k; ++i) idx[i] += static_cast<uint32_t>(s.offset);
    at += s.k;
  }
  for (size_t i = 0; i < n; ++i) {
    const float w = roundToWire(val[i], layout.dtype);
    state.residual[idx[i]] = kernels::wireRemainder(val[i], w);
    val[i] = w;
  }
  switch (layout.dtype) {  // exact: every value is representable in the wire dtype now
    case DataType::kFloat16:
      for (size_t i = 0; i < n; ++i) kernels::storeWire(val[i], reinterpret_cast<kernels::Half*>(mine->val(n)) + i);
      break;
    case DataType::kBFloat16:
      for (size_t i = 0; i < n; ++i) {
        kernels::storeWire(val[i], reinterpret_cast<kernels::BFloat16*>(mine->val(n)) + i);
      }
      break;
    case DataType::kFloat32: std::memcpy(mine->val(n), val.data(), n * sizeof(float)); break;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      break;  // not a top-k wire type: sparseDtype() keeps them off this path
  }
  at = 0;
  for (const SparseSegment& s : layout.segments) {  // momentum factor masking
    if (s.momentum > 0 && s.k > 0) kernels::clearSelected(state.velocity, &idx[at], s.k);
    at += s.k;
  }
  if (!params.error_feedback) std::memset(state.residual, 0, count * sizeof(float));
  return Status::OK();
}

// runTopkMerge's Ops over SetComm links, with the CPU merge kernels.
class HostMergeOps {
 public:
  // This member's own pairs are already in scratch.lists[kMine] (selectLocal).
  HostMergeOps(SetComm& comm, const SparseLayout& layout, SparseScratch& scratch)
      : c_(comm),
        layout_(layout),
        segments_(layout.mergeSegments()),
        n_(layout.pairs()),
        bytes_(n_ * (4 + dtypeSize(layout.dtype))),
        s_(scratch) {}

  PairBlob& list(PairRole r) { return s_.lists[static_cast<int>(r)]; }
  std::vector<uint8_t>& dropped(PairRole r) { return r == PairRole::kExtra ? s_.extra_dropped : s_.mine_dropped; }

  Status clearDropped() {
    s_.mine_dropped.assign(n_, 0);
    s_.extra_dropped.assign(n_, 0);
    return Status::OK();
  }
  Status start() {
    list(PairRole::kCur) = list(PairRole::kMine);
    return Status::OK();
  }
  Status send(int member, PairRole r, const char* what) {
    std::vector<P2POp> ops = {{c_.link(member), true, list(r).bytes.data(), bytes_}};
    return runP2P(c_, ops, std::string(what) + " to rank " + std::to_string(c_.ranks[member]));
  }
  Status recv(int member, PairRole into, const char* what) { return transfer(member, nullptr, into, 0, what); }
  Status swap(int member, const char* what) {
    return transfer(member, &list(PairRole::kCur), PairRole::kTheirs, 0, what);
  }
  Status merge(PairRole other) {
    PairBlob& cur = list(PairRole::kCur);
    PairBlob& b = list(other);
    PairBlob& next = s_.next;
    next.bytes.resize(bytes_);
    LIGHTCC_RETURN_IF_ERROR(kernels::mergePairs(cur.idx(), cur.val(n_), b.idx(), b.val(n_), n_, segments_,
                                                layout_.dtype, next.idx(), next.val(n_), s_.merge));
    cur.bytes.swap(next.bytes);
    return Status::OK();
  }
  Status mark(PairRole watched) {
    kernels::markDropped(list(PairRole::kCur).idx(), n_, list(watched).idx(), n_, dropped(watched).data());
    return Status::OK();
  }
  // The final list, then the folded member's dropped flags as bits.
  Status sendFinal(int member) {
    PairBlob& msg = s_.msg;
    msg.bytes = list(PairRole::kCur).bytes;
    msg.bytes.resize(bytes_ + (n_ + 7) / 8, 0);
    auto* bits = reinterpret_cast<uint8_t*>(msg.bytes.data() + bytes_);
    for (size_t i = 0; i < n_; ++i) bits[i / 8] |= static_cast<uint8_t>(s_.extra_dropped[i] << (i % 8));
    std::vector<P2POp> ops = {{c_.link(member), true, msg.bytes.data(), msg.bytes.size()}};
    return runP2P(c_, ops, "top-k unfold to rank " + std::to_string(c_.ranks[member]));
  }
  Status receiveFinal(int member) {
    LIGHTCC_RETURN_IF_ERROR(transfer(member, nullptr, PairRole::kCur, (n_ + 7) / 8, "top-k unfold"));
    PairBlob& cur = list(PairRole::kCur);
    const auto* bits = reinterpret_cast<const uint8_t*>(cur.bytes.data() + bytes_);
    for (size_t i = 0; i < n_; ++i) s_.mine_dropped[i] = (bits[i / 8] >> (i % 8)) & 1u;
    cur.bytes.resize(bytes_);
    return Status::OK();
  }

 private:
  // Sends `send` (if any) to `member` and receives its list (plus `extra` bytes) into `into`.
  Status transfer(int member, PairBlob* send, PairRole into, size_t extra, const char* what) {
    std::vector<P2POp> ops;
    if (send != nullptr) ops.push_back({c_.link(member), true, send->bytes.data(), bytes_});
    PairBlob& in = list(into);
    in.bytes.resize(bytes_ + extra);
    ops.push_back({c_.link(member), false, in.bytes.data(), bytes_ + extra});
    const int rank = c_.ranks[member];
    LIGHTCC_RETURN_IF_ERROR(runP2P(c_, ops, std::string(what) + " with rank " + std::to_string(rank)));
    return kernels::checkPairs(in.idx(), n_, layout_.count(), rank);
  }

  SetComm& c_;
  const SparseLayout& layout_;
  const std::vector<kernels::MergeSegment> segments_;
  const size_t n_, bytes_;
  SparseScratch& s_;
};

}  // namespace

std::vector<kernels::MergeSegment> SparseLayout::mergeSegments() const {
  std::vector<kernels::MergeSegment> out;
  size_t at = 0;
  for (const SparseSegment& s : segments) {
    out.push_back({at, s.k});
    at += s.k;
  }
  return out;
}

size_t SparseLayout::pairs() const {
  size_t k = 0;
  for (const SparseSegment& s : segments) k += s.k;
  return k;
}

// Tensors of one fused batch may differ in momentum: each segment accumulates by its own.
Status sparseAccumulate(const SparseLayout& layout, const void* contrib, float scale, const SparseState& state) {
  const size_t esize = dtypeSize(layout.dtype);
  for (const SparseSegment& s : layout.segments) {
    const void* g = static_cast<const char*>(contrib) + s.offset * esize;
    if (s.momentum > 0) {
      LIGHTCC_RETURN_IF_ERROR(kernels::dgcAccumulate(state.velocity + s.offset, state.residual + s.offset, g,
                                                     layout.dtype, s.count, scale, s.momentum, s.nesterov));
    } else {
      LIGHTCC_RETURN_IF_ERROR(kernels::accumulateResidualAny(state.residual + s.offset, g, layout.dtype, s.count, scale));
    }
  }
  return Status::OK();
}

bool sparseDtype(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
}

uint64_t sparseAllreduceBytes(int p, size_t pairs, size_t value_bytes) {
  if (p <= 1) return 0;
  int m = 1, rounds = 0;
  while (m * 2 <= p) {
    m *= 2;
    ++rounds;
  }
  const uint64_t msg = static_cast<uint64_t>(pairs) * (4 + value_bytes);
  // A member that folds another in sends every round and the final list with its survivor bits.
  return m < p ? (rounds + 1) * msg + (pairs + 7) / 8 : rounds * msg;
}

Status sparseAllreduce(SetComm& comm, const SparseLayout& layout, const void* contrib, float scale, void* out,
                       const SparseState& state, const TopkParams& params, SparseScratch& scratch) {
  if (!sparseDtype(layout.dtype)) {
    return Status::InvalidArgument(std::string("top-k cannot compress ") + dtypeName(layout.dtype));
  }
  const size_t count = layout.count();
  if (count > kernels::kMaxTopkCount) {
    return Status::InvalidArgument("top-k batch of " + std::to_string(count) + " elements exceeds uint32 indices");
  }
  LIGHTCC_RETURN_IF_ERROR(selectLocal(layout, contrib, scale, state, params, scratch.merge.select, scratch.values,
                                      &scratch.lists[static_cast<int>(PairRole::kMine)]));
  HostMergeOps ops(comm, layout, scratch);
  LIGHTCC_RETURN_IF_ERROR(runTopkMerge(ops, comm.size(), comm.me));
  const size_t n = layout.pairs();
  PairBlob& own = ops.list(PairRole::kMine);
  if (params.error_feedback) {
    // Error feedback keeps what the merges dropped: those pairs reached no one.
    LIGHTCC_RETURN_IF_ERROR(kernels::restoreDropped(state.residual, own.idx(), own.val(n), layout.dtype,
                                                    ops.dropped(PairRole::kMine).data(), n));
  }
  std::memset(out, 0, count * dtypeSize(layout.dtype));
  PairBlob& result = ops.list(PairRole::kCur);
  return kernels::placePairs(out, count, layout.dtype, result.idx(), result.val(n), n);
}

Status hierSparseAllreduce(HierComm& h, const SparseLayout& layout, const void* in, void* out,
                           const ReduceSpec& spec, const SparseState& state, const TopkParams& params,
                           SparseScratch& scratch) {
  const DataType dtype = layout.dtype;
  // The group reduces with the prescale; the cross step applies the postscale on each share.
  ReduceSpec intra = spec;
  intra.postscale = 1.0;
  IoVec io;
  io.add(in, out, layout.count() * dtypeSize(dtype));
  auto hook = [&](char* share, size_t offset, size_t n) -> Status {
    SparseLayout part;
    part.dtype = dtype;
    part.segments = {{0, n, n == 0 ? 0 : kernels::topkK(n, params.density), params.momentum, params.nesterov}};
    const SparseState at{state.residual + offset, state.velocity != nullptr ? state.velocity + offset : nullptr};
    LIGHTCC_RETURN_IF_ERROR(sparseAllreduce(h.cross, part, share, 1.0f, share, at, params, scratch));
    if (spec.postscale != 1.0) kernels::scale(share, share, n, dtype, spec.postscale);
    return Status::OK();
  };
  return shmAllreduce(h.intra, io, intra, hook);
}

}  // namespace lightcc
