// 2D allreduce, allgather and reducescatter (shared-memory phases around a cross-group ring) and the host-leader allreduce.
#include "algorithms/hierarchical.h"

#include <algorithm>
#include <cstring>

#include "kernels/reduce.h"

namespace lightcc {
namespace {

// Splits a spec so the group reduces with the prescale and the last stage applies the rest.
void splitSpec(const ReduceSpec& spec, ReduceSpec* first, ReduceSpec* last) {
  *first = spec;
  first->postscale = 1.0;
  first->int_divisor = 1;
  *last = spec;
  last->prescale = 1.0;
}

}  // namespace

Status hierAllreduce(HierComm& h, const IoVec& io, const ReduceSpec& spec) {
  if (h.cross.size() == 1) return shmAllreduce(h.intra, io, spec);
  ReduceSpec intra, cross;
  splitSpec(spec, &intra, &cross);
  auto hook = [&](char* share, size_t, size_t n) { return ringAllreduce(h.cross, share, n, cross); };
  return shmAllreduce(h.intra, io, intra, hook);
}

namespace {

// A byte range of the allgather's output.
struct Span {
  size_t off = 0, len = 0;
};

// ringAllgather's steps over pieces that lie apart in `out` (member j's is spans[j]), so the cross
// step lands every share in place instead of in a buffer to copy out.
Status ringAllgatherSpans(SetComm& c, char* out, const std::vector<Span>& spans) {
  const int p = c.size();
  for (int s = 0; s < p - 1; ++s) {
    const Span& send = spans[(c.me - s + p) % p];
    const Span& recv = spans[(c.me - s - 1 + p) % p];
    std::vector<P2POp> ops = {{c.link((c.me + 1) % p), true, out + send.off, send.len},
                              {c.link((c.me - 1 + p) % p), false, out + recv.off, recv.len}};
    LIGHTCC_RETURN_IF_ERROR(runP2P(c, ops, "cross-group allgather step"));
  }
  return Status::OK();
}

// shmAllgather's rounds for pieces already in every member's `out` but scattered there: member j
// holds the ranges of held[j] (in == out), stages them, and the others copy them to the same places.
Status shmAllgatherSpans(SetComm& c, const std::vector<IoVec>& held) {
  LIGHTCC_RETURN_IF_ERROR(c.claimStaging());
  const size_t cap = 2 * c.chunk_bytes;  // both staging slots, as shmAllgather
  size_t most = 0;
  for (const IoVec& v : held) most = std::max(most, v.total());
  for (size_t base = 0; base < most; base += cap) {
    const IoVec& mine = held[c.me];
    if (base < mine.total()) mine.gather(base, std::min(cap, mine.total() - base), c.staging(c.me, 0));
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("2D allgather copy-in"));
    for (int j = 0; j < c.size(); ++j) {
      if (j == c.me || base >= held[j].total()) continue;
      held[j].scatter(base, std::min(cap, held[j].total() - base), c.staging(j, 0));
    }
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("2D allgather copy-out"));
  }
  return Status::OK();
}

}  // namespace

Status hierAllgather(HierComm& h, const void* in, const std::vector<size_t>& piece_bytes, void* out) {
  const int g = h.intra.size(), n = h.cross.size();
  char* dst = static_cast<char*>(out);
  // Group k's range of the output: members k*g .. k*g+g-1, consecutive.
  std::vector<Span> group(n);
  size_t off = 0;
  for (int k = 0; k < n; ++k) {
    group[k].off = off;
    for (int j = k * g; j < k * g + g; ++j) group[k].len += piece_bytes[j];
    off += group[k].len;
  }
  const int mine = h.cross.me;
  const std::vector<size_t> in_group(piece_bytes.begin() + mine * g, piece_bytes.begin() + mine * g + g);
  LIGHTCC_RETURN_IF_ERROR(shmAllgather(h.intra, in, in_group, dst + group[mine].off).withContext("in the group"));
  // Share j of group k: a 64-byte-aligned cut, so the copies start on cache lines whatever the blocks.
  auto share = [&](int k, int j) {
    const size_t part = (group[k].len + g - 1) / g, aligned = (part + 63) / 64 * 64;
    const size_t lo = std::min(group[k].len, static_cast<size_t>(j) * aligned);
    return Span{group[k].off + lo, std::min(group[k].len, lo + aligned) - lo};
  };
  std::vector<Span> cross(n);
  for (int k = 0; k < n; ++k) cross[k] = share(k, h.intra.me);
  LIGHTCC_RETURN_IF_ERROR(ringAllgatherSpans(h.cross, dst, cross).withContext("across the groups"));
  if (g == 1) return Status::OK();
  // Member j now holds share j of every group's range except its own group's, which all have.
  std::vector<IoVec> held(g);
  for (int j = 0; j < g; ++j) {
    for (int k = 0; k < n; ++k) {
      const Span s = share(k, j);
      if (k != mine) held[j].add(dst + s.off, dst + s.off, s.len);
    }
  }
  return shmAllgatherSpans(h.intra, held).withContext("in the group");
}

Status hierReducescatter(HierComm& h, const void* in, void* out, const std::vector<int64_t>& rows,
                         size_t row_elems, const ReduceSpec& spec) {
  const int g = h.intra.size(), n = h.cross.size(), l = h.intra.me;
  const size_t esize = dtypeSize(spec.dtype);
  const RowSegments blocks = rowSegments(rows, row_elems);
  // Lane j: the blocks of members k*g + j, k = 0..n-1, in that order. The group's reducescatter
  // gathers each lane from where its blocks lie and hands member j its lane summed over the host.
  std::vector<IoVec> lanes(g);
  std::vector<int64_t> cross_rows(n);
  const char* src = static_cast<const char*>(in);
  for (int j = 0; j < g; ++j) {
    for (int k = 0; k < n; ++k) {
      const size_t m = static_cast<size_t>(k) * g + j;
      lanes[j].add(src + blocks.start[m] * esize, nullptr, blocks.len[m] * esize);
      if (j == l) cross_rows[k] = rows[m];
    }
  }
  ReduceSpec in_host, across;
  splitSpec(spec, &in_host, &across);
  std::vector<char> mine(lanes[l].total());
  if (g > 1) {
    LIGHTCC_RETURN_IF_ERROR(shmReducescatterShares(h.intra, lanes, mine.data(), in_host).withContext("in the group"));
  } else {
    lanes[l].gather(0, mine.size(), mine.data());
    kernels::scale(mine.data(), mine.data(), mine.size() / esize, spec.dtype, in_host.prescale);
  }
  // Then the lane's ring across the groups: cross member k is group k, so member k*g + l (me) ends
  // with block k*g + l, its own, summed over every host.
  return ringReducescatterInPlace(h.cross, mine.data(), out, cross_rows, row_elems, across)
      .withContext("across the groups");
}

namespace {

Status leaderSteps(SetComm& intra, SetComm& leaders, const IoVec& io, const ReduceSpec& spec,
                   std::vector<char>& scratch) {
  ReduceSpec in_host, across;
  splitSpec(spec, &in_host, &across);
  const size_t esize = dtypeSize(spec.dtype);
  if (intra.size() > 1) {
    LIGHTCC_RETURN_IF_ERROR(shmAllreduce(intra, io, in_host).withContext("in the host"));
  } else {
    across = spec;  // alone on this host: the leader's step applies the whole spec to the input
  }
  // From here on the outputs hold the host's sum (or, alone, the inputs once staged).
  IoVec out;
  for (const auto& s : io.segments()) out.add(intra.size() > 1 ? s.out : s.in, s.out, s.bytes);
  char* buf = out.stage(scratch);
  if (intra.me == 0) {
    LIGHTCC_RETURN_IF_ERROR(recursiveDoublingAllreduce(leaders, buf, out.total() / esize, across)
                                .withContext("among the host leaders"));
  }
  if (intra.size() > 1) {
    LIGHTCC_RETURN_IF_ERROR(shmBroadcast(intra, buf, buf, out.total(), 0).withContext("in the host"));
  }
  out.unstage(buf);
  return Status::OK();
}

}  // namespace

Status leaderAllreduce(SetComm& intra, SetComm& leaders, const IoVec& io, const ReduceSpec& spec,
                       std::vector<char>& scratch) {
  // A host's other ranks wait on their leader, not on the network: when a host is lost, their
  // shared-memory wait times out naming only the (live) leader, so they run the peer check too.
  const Status st = leaderSteps(intra, leaders, io, spec, scratch);
  return net::withPeerCheck(st, intra.dialer != nullptr ? intra.dialer->peerTargets() : net::linkTargets(intra.links),
                            intra.host->peerCheckSeconds());
}

}  // namespace lightcc
