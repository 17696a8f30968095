// Sparse allreduce: local selection, the recursive-doubling merge of (index, value) pairs, error feedback.
#include "algorithms/sparse_allreduce.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/half.h"
#include "kernels/reduce.h"
#include "kernels/topk_ops.h"
#include "kernels/topk_train.h"

namespace lightcc {
namespace {

// A member's pairs: indices strictly ascending over the batch's index space; every value exactly
// representable in the wire dtype, so what a member holds is what its partner receives.
struct Pairs {
  std::vector<uint32_t> idx;
  std::vector<float> val;
};

float roundToWire(float v, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16: return kernels::halfToFloat(kernels::floatToHalf(v));
    case DataType::kBFloat16: return kernels::bf16ToFloat(kernels::floatToBf16(v));
    default: return v;
  }
}

size_t wireBytes(size_t pairs, DataType dtype) { return pairs * (4 + dtypeSize(dtype)); }

void encode(const Pairs& p, DataType dtype, char* buf) {
  const size_t n = p.idx.size();
  std::memcpy(buf, p.idx.data(), 4 * n);
  char* vals = buf + 4 * n;
  for (size_t i = 0; i < n; ++i) {
    if (dtype == DataType::kFloat32) {
      std::memcpy(vals + 4 * i, &p.val[i], 4);
    } else {
      const uint16_t h = dtype == DataType::kFloat16 ? kernels::floatToHalf(p.val[i]) : kernels::floatToBf16(p.val[i]);
      std::memcpy(vals + 2 * i, &h, 2);
    }
  }
}

// Indices come from a peer: each must fall in [0, count) and ascend, or the merge is wrong.
Status decode(const char* buf, size_t n, size_t count, DataType dtype, int peer, Pairs* p) {
  p->idx.resize(n);
  p->val.resize(n);
  std::memcpy(p->idx.data(), buf, 4 * n);
  const char* vals = buf + 4 * n;
  for (size_t i = 0; i < n; ++i) {
    if (p->idx[i] >= count || (i > 0 && p->idx[i] <= p->idx[i - 1])) {
      return Status::PeerFailure("rank " + std::to_string(peer) + " sent top-k pair " + std::to_string(i) +
                                 " with index " + std::to_string(p->idx[i]) + " (" + std::to_string(count) +
                                 " elements, indices must ascend)");
    }
    if (dtype == DataType::kFloat32) {
      std::memcpy(&p->val[i], vals + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, vals + 2 * i, 2);
      p->val[i] = dtype == DataType::kFloat16 ? kernels::halfToFloat(h) : kernels::bf16ToFloat(h);
    }
  }
  return Status::OK();
}

// Larger magnitude first (NaN above inf, as the selection kernels order them), then lower index.
bool before(float a, uint32_t ia, float b, uint32_t ib) {
  const uint32_t ka = kernels::floatBits(a) & 0x7fffffffu, kb = kernels::floatBits(b) & 0x7fffffffu;
  return ka != kb ? ka > kb : ia < ib;
}

// out = per segment, the k_s largest of the union of a and b (equal indices summed, rounded).
void merge(const Pairs& a, const Pairs& b, const SparseLayout& layout, Pairs* out) {
  Pairs u;
  u.idx.reserve(a.idx.size() + b.idx.size());
  u.val.reserve(a.idx.size() + b.idx.size());
  size_t i = 0, j = 0;
  while (i < a.idx.size() || j < b.idx.size()) {
    if (j == b.idx.size() || (i < a.idx.size() && a.idx[i] < b.idx[j])) {
      u.idx.push_back(a.idx[i]);
      u.val.push_back(a.val[i++]);
    } else if (i == a.idx.size() || b.idx[j] < a.idx[i]) {
      u.idx.push_back(b.idx[j]);
      u.val.push_back(b.val[j++]);
    } else {
      u.idx.push_back(a.idx[i]);
      u.val.push_back(roundToWire(a.val[i++] + b.val[j++], layout.dtype));
    }
  }
  out->idx.clear();
  out->val.clear();
  std::vector<size_t> pos;
  size_t at = 0;
  for (const SparseSegment& s : layout.segments) {
    const size_t lo = at;
    while (at < u.idx.size() && u.idx[at] < s.offset + s.count) ++at;
    pos.resize(at - lo);
    for (size_t q = 0; q < pos.size(); ++q) pos[q] = lo + q;
    const size_t keep = std::min(s.k, pos.size());
    auto first = [&](size_t x, size_t y) { return before(u.val[x], u.idx[x], u.val[y], u.idx[y]); };
    if (keep < pos.size()) {
      std::nth_element(pos.begin(), pos.begin() + static_cast<std::ptrdiff_t>(keep), pos.end(), first);
      pos.resize(keep);
      std::sort(pos.begin(), pos.end());  // positions ascend as indices do
    }
    for (size_t x : pos) {
      out->idx.push_back(u.idx[x]);
      out->val.push_back(u.val[x]);
    }
  }
}

// alive[i] stays set only while watched.idx[i] is in `list` (both ascending).
void keepSurvivors(const Pairs& list, const Pairs& watched, std::vector<uint8_t>* alive) {
  size_t j = 0;
  for (size_t i = 0; i < watched.idx.size(); ++i) {
    while (j < list.idx.size() && list.idx[j] < watched.idx[i]) ++j;
    if (j == list.idx.size() || list.idx[j] != watched.idx[i]) (*alive)[i] = 0;
  }
}

// Adds the contribution into the residual and selects this member's pairs per segment.
Status selectLocal(const SparseLayout& layout, const void* contrib, float scale, const SparseState& state,
                   const TopkParams& params, kernels::TopkScratch& scratch, Pairs* mine) {
  const size_t count = layout.count();
  LIGHTCC_RETURN_IF_ERROR(sparseAccumulate(layout, contrib, scale, state));
  mine->idx.resize(layout.pairs());
  mine->val.resize(layout.pairs());
  size_t at = 0;
  for (const SparseSegment& s : layout.segments) {
    if (s.k == 0) continue;
    kernels::selectTopk(state.residual + s.offset, s.count, s.k, params.seed + s.offset, &mine->idx[at],
                        &mine->val[at], scratch);
    for (size_t i = at; i < at + s.k; ++i) mine->idx[i] += static_cast<uint32_t>(s.offset);
    at += s.k;
  }
  for (size_t i = 0; i < mine->idx.size(); ++i) {
    // What leaves is the value as the wire carries it; the residual keeps what rounding lost.
    const float v = mine->val[i], w = roundToWire(v, layout.dtype);
    state.residual[mine->idx[i]] = kernels::wireRemainder(v, w);
    mine->val[i] = w;
  }
  at = 0;
  for (const SparseSegment& s : layout.segments) {  // momentum factor masking
    if (s.momentum > 0 && s.k > 0) kernels::clearSelected(state.velocity, &mine->idx[at], s.k);
    at += s.k;
  }
  if (!params.error_feedback) std::memset(state.residual, 0, count * sizeof(float));
  return Status::OK();
}

// The fold/rounds/unfold of the header over `comm`; `alive` ends marking which of `mine` reached
// `result`.
class Merger {
 public:
  Merger(SetComm& comm, const SparseLayout& layout) : c_(comm), layout_(layout), n_(layout.pairs()) {}

  Status run(const Pairs& mine, Pairs* result, std::vector<uint8_t>* alive) {
    const int p = c_.size(), me = c_.me;
    int m = 1;
    while (m * 2 <= p) m *= 2;
    alive->assign(n_, 1);
    if (me >= m) return asExtra(me - m, result, mine, alive);
    Pairs cur = mine, theirs, next, extra;
    std::vector<uint8_t> extra_alive;
    const bool folds = me + m < p;
    if (folds) {
      LIGHTCC_RETURN_IF_ERROR(exchange(me + m, nullptr, &extra, 0, "top-k fold"));
      merge(cur, extra, layout_, &next);
      cur.idx.swap(next.idx);
      cur.val.swap(next.val);
      extra_alive.assign(n_, 1);
      keepSurvivors(cur, extra, &extra_alive);
      keepSurvivors(cur, mine, alive);
    }
    for (int step = 1; step < m; step *= 2) {
      LIGHTCC_RETURN_IF_ERROR(exchange(me ^ step, &cur, &theirs, 0, "top-k merge round"));
      merge(cur, theirs, layout_, &next);
      cur.idx.swap(next.idx);
      cur.val.swap(next.val);
      keepSurvivors(cur, mine, alive);
      if (folds) keepSurvivors(cur, extra, &extra_alive);
    }
    if (folds) LIGHTCC_RETURN_IF_ERROR(sendFinal(me + m, cur, extra_alive));
    *result = std::move(cur);
    return Status::OK();
  }

 private:
  // Sends `send` (if any) to member `peer` and receives its n_ pairs plus `extra` bytes.
  Status exchange(int peer, const Pairs* send, Pairs* recv, size_t extra, const char* what) {
    const size_t bytes = wireBytes(n_, layout_.dtype);
    std::vector<P2POp> ops;
    if (send != nullptr) {
      out_.resize(bytes);
      encode(*send, layout_.dtype, out_.data());
      ops.push_back({c_.link(peer), true, out_.data(), bytes});
    }
    in_.resize(bytes + extra);
    ops.push_back({c_.link(peer), false, in_.data(), bytes + extra});
    const int rank = c_.ranks[peer];
    LIGHTCC_RETURN_IF_ERROR(runP2P(c_, ops, std::string(what) + " with rank " + std::to_string(rank)));
    return decode(in_.data(), n_, layout_.count(), layout_.dtype, rank, recv);
  }

  Status asExtra(int host, Pairs* result, const Pairs& mine, std::vector<uint8_t>* alive) {
    const size_t bytes = wireBytes(n_, layout_.dtype);
    out_.resize(bytes);
    encode(mine, layout_.dtype, out_.data());
    std::vector<P2POp> send = {{c_.link(host), true, out_.data(), bytes}};
    LIGHTCC_RETURN_IF_ERROR(runP2P(c_, send, "top-k fold to rank " + std::to_string(c_.ranks[host])));
    LIGHTCC_RETURN_IF_ERROR(exchange(host, nullptr, result, (n_ + 7) / 8, "top-k unfold"));
    const auto* bits = reinterpret_cast<const uint8_t*>(in_.data() + bytes);
    for (size_t i = 0; i < n_; ++i) (*alive)[i] = (bits[i / 8] >> (i % 8)) & 1u;
    return Status::OK();
  }

  Status sendFinal(int extra, const Pairs& final_pairs, const std::vector<uint8_t>& extra_alive) {
    const size_t bytes = wireBytes(n_, layout_.dtype);
    out_.assign(bytes + (n_ + 7) / 8, 0);
    encode(final_pairs, layout_.dtype, out_.data());
    auto* bits = reinterpret_cast<uint8_t*>(out_.data() + bytes);
    for (size_t i = 0; i < n_; ++i) bits[i / 8] |= static_cast<uint8_t>(extra_alive[i] << (i % 8));
    std::vector<P2POp> send = {{c_.link(extra), true, out_.data(), out_.size()}};
    return runP2P(c_, send, "top-k unfold to rank " + std::to_string(c_.ranks[extra]));
  }

  SetComm& c_;
  const SparseLayout& layout_;
  const size_t n_;
  std::vector<char> out_, in_;
};

void writeDense(const Pairs& pairs, DataType dtype, size_t count, void* out) {
  std::memset(out, 0, count * dtypeSize(dtype));
  for (size_t i = 0; i < pairs.idx.size(); ++i) {
    const uint32_t at = pairs.idx[i];
    const float v = pairs.val[i];
    switch (dtype) {
      case DataType::kFloat16: static_cast<uint16_t*>(out)[at] = kernels::floatToHalf(v); break;
      case DataType::kBFloat16: static_cast<uint16_t*>(out)[at] = kernels::floatToBf16(v); break;
      default: static_cast<float*>(out)[at] = v; break;
    }
  }
}

}  // namespace

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
                       const SparseState& state, const TopkParams& params, kernels::TopkScratch& scratch) {
  if (!sparseDtype(layout.dtype)) {
    return Status::InvalidArgument(std::string("top-k cannot compress ") + dtypeName(layout.dtype));
  }
  const size_t count = layout.count();
  if (count > kernels::kMaxTopkCount) {
    return Status::InvalidArgument("top-k batch of " + std::to_string(count) + " elements exceeds uint32 indices");
  }
  Pairs mine, result;
  LIGHTCC_RETURN_IF_ERROR(selectLocal(layout, contrib, scale, state, params, scratch, &mine));
  std::vector<uint8_t> alive;
  Merger merger(comm, layout);
  LIGHTCC_RETURN_IF_ERROR(merger.run(mine, &result, &alive));
  if (params.error_feedback) {
    // Error feedback keeps what the merges dropped: those pairs reached no one.
    for (size_t i = 0; i < mine.idx.size(); ++i) {
      if (!alive[i]) state.residual[mine.idx[i]] += mine.val[i];
    }
  }
  writeDense(result, layout.dtype, count, out);
  return Status::OK();
}

Status hierSparseAllreduce(HierComm& h, const SparseLayout& layout, const void* in, void* out,
                           const ReduceSpec& spec, const SparseState& state, const TopkParams& params,
                           kernels::TopkScratch& scratch) {
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
