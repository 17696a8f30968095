// Shared-memory collectives: copy into own staging, synchronise on counters, read peers' staging.
#include <algorithm>
#include <cstring>

#include "algorithms/collectives.h"
#include "kernels/reduce.h"

namespace lightcc {
namespace {
size_t ceilDiv(size_t a, size_t b) { return (a + b - 1) / b; }
}  // namespace

std::vector<int64_t> reducescatterRows(int64_t dim0, int members) {
  std::vector<int64_t> rows(members, dim0 / members);
  for (int j = 0; j < dim0 % members; ++j) ++rows[j];
  return rows;
}

// Small tensors: every member stages its whole input and reduces the whole tensor itself from
// everyone's staging. That costs p-fold reduce work, which for a small tensor is less than the
// two barriers it saves; and it leaves without a closing barrier — the staging ledger makes the
// next writer of this staging wait for readers instead (rarely needed: by the time this rank has
// another operation agreed, its peers have long finished reading).
Status shmAllreduceOneShot(SetComm& c, const IoVec& io, const ReduceSpec& spec) {
  const size_t esize = dtypeSize(spec.dtype);
  const int p = c.size();
  LIGHTCC_RETURN_IF_ERROR(c.claimStaging());
  char* mine = c.staging(c.me, 0);
  io.gather(0, io.total(), mine);
  for (int j = 0; j < p; ++j) {
    if (j != c.me) c.host->oweRead(c.local_index[j]);
  }
  LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("allreduce copy-in"));
  std::vector<const void*> srcs(p);
  // Every member adds in member order from the staged copies, so all get bit-identical results.
  io.forEachPiece(0, io.total(), [&](const char*, char* out, size_t len, size_t done) {
    for (int j = 0; j < p; ++j) srcs[j] = c.staging(j, 0) + done;
    kernels::reduceN(out, srcs.data(), p, len / esize, spec.dtype, spec.op, spec.prescale, spec.postscale);
    kernels::divideIntegers(out, len / esize, spec.dtype, spec.int_divisor);
  });
  for (int j = 0; j < p; ++j) {
    if (j != c.me) c.host->readDone(c.local_index[j]);
  }
  return Status::OK();
}

Status shmAllreduce(SetComm& c, const IoVec& io, const ReduceSpec& spec, const ShareHook& on_share) {
  // Each member reads all p staged copies, so the limit shrinks with p beyond two members: the
  // one-step path pays off only while everything it touches stays in the core's cache.
  const size_t oneshot_limit = std::min(c.chunk_bytes, c.oneshot_bytes * 2 / std::max(2, c.size()));
  if (!on_share && io.total() <= oneshot_limit) return shmAllreduceOneShot(c, io, spec);
  LIGHTCC_RETURN_IF_ERROR(c.claimStaging());
  const size_t esize = dtypeSize(spec.dtype);
  const size_t count = io.total() / esize;
  const int p = c.size();
  // Shares are multiples of 16 elements so every rank's kernel starts cache-line aligned.
  size_t win = (c.chunk_bytes / esize) / (16 * p) * (16 * p);
  if (win == 0) win = (c.chunk_bytes / esize) / p * p;
  std::vector<const void*> srcs(p);
  int slot = 0;
  for (size_t w0 = 0; w0 < count; w0 += win, slot ^= 1) {
    const size_t wn = std::min(win, count - w0);
    char* mine = c.staging(c.me, slot);
    const size_t part = std::max<size_t>(ceilDiv(ceilDiv(wn, p), 16) * 16, 1);
    const size_t lo = std::min(wn, c.me * part), hi = std::min(wn, lo + part);
    // Stage only what the peers reduce: my own share is read straight from my input, which
    // saves a copy in and (without a hook) a copy out of 1/p of every byte.
    io.gather(w0 * esize, lo * esize, mine);
    io.gather((w0 + hi) * esize, (wn - hi) * esize, mine + hi * esize);
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("allreduce copy-in"));
    io.forEachPiece((w0 + lo) * esize, (hi - lo) * esize, [&](const char* in, char* out, size_t len, size_t done) {
      char* share = mine + lo * esize + done;
      for (int j = 0; j < p; ++j) srcs[j] = j == c.me ? in : c.staging(j, slot) + lo * esize + done;
      // Without a hook the result is final: write it to my output and stage a copy for the peers.
      // A hook (2D) still changes it, so then it is reduced into staging and copied out below.
      char* dst = on_share ? share : out;
      kernels::reduceN(dst, srcs.data(), p, len / esize, spec.dtype, spec.op, spec.prescale, spec.postscale);
      kernels::divideIntegers(dst, len / esize, spec.dtype, spec.int_divisor);
      if (!on_share && p > 1) std::memcpy(share, out, len);
    });
    // Every member calls the hook, even with an empty share, so peers across hosts stay in step.
    if (on_share) LIGHTCC_RETURN_IF_ERROR(on_share(mine + lo * esize, w0 + lo, hi - lo));
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("allreduce reduce"));
    for (int j = 0; j < p; ++j) {
      if (j == c.me && !on_share) continue;
      const size_t jlo = std::min(wn, j * part), jhi = std::min(wn, jlo + part);
      if (jhi > jlo) io.scatter((w0 + jlo) * esize, (jhi - jlo) * esize, c.staging(j, slot) + jlo * esize);
    }
  }
  // Nobody may reuse its staging for the next operation until every peer has copied out.
  return c.shmBarrier("allreduce copy-out");
}

Status shmAllgather(SetComm& c, const void* in, const std::vector<size_t>& piece_bytes, void* out) {
  LIGHTCC_RETURN_IF_ERROR(c.claimStaging());
  const int p = c.size();
  const size_t cap = 2 * c.chunk_bytes;
  std::vector<size_t> offs(p, 0);
  size_t rounds = 0;
  for (int j = 0; j < p; ++j) {
    if (j > 0) offs[j] = offs[j - 1] + piece_bytes[j - 1];
    rounds = std::max(rounds, ceilDiv(piece_bytes[j], cap));
  }
  char* dst = static_cast<char*>(out);
  if (piece_bytes[c.me] > 0 && dst + offs[c.me] != in) {
    std::memcpy(dst + offs[c.me], in, piece_bytes[c.me]);
  }
  for (size_t r = 0; r < rounds; ++r) {
    const size_t base = r * cap;
    if (base < piece_bytes[c.me]) {
      std::memcpy(c.staging(c.me, 0), static_cast<const char*>(in) + base,
                  std::min(cap, piece_bytes[c.me] - base));
    }
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("allgather copy-in"));
    for (int j = 0; j < p; ++j) {
      if (j == c.me || base >= piece_bytes[j]) continue;
      std::memcpy(dst + offs[j] + base, c.staging(j, 0), std::min(cap, piece_bytes[j] - base));
    }
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("allgather copy-out"));
  }
  return Status::OK();
}

Status shmBroadcast(SetComm& c, const void* in, void* out, size_t bytes, int root_member) {
  LIGHTCC_RETURN_IF_ERROR(c.claimStaging());
  const size_t cap = 2 * c.chunk_bytes;
  const bool root = c.me == root_member;
  if (root && in != out && bytes > 0) std::memcpy(out, in, bytes);
  for (size_t base = 0; base < bytes; base += cap) {
    const size_t n = std::min(cap, bytes - base);
    if (root) std::memcpy(c.staging(c.me, 0), static_cast<const char*>(in) + base, n);
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("broadcast copy-in"));
    if (!root) std::memcpy(static_cast<char*>(out) + base, c.staging(root_member, 0), n);
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("broadcast copy-out"));
  }
  return Status::OK();
}

Status shmExchangeSplits(SetComm& c, const std::vector<int64_t>& send_rows, SplitMatrix* matrix) {
  const int p = c.size();
  std::memcpy(c.meta(c.me), send_rows.data(), sizeof(int64_t) * p);
  LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("alltoall splits"));
  matrix->assign(p, std::vector<int64_t>(p));
  for (int j = 0; j < p; ++j) std::memcpy((*matrix)[j].data(), c.meta(j), sizeof(int64_t) * p);
  // Meta is rewritten by the next operation only after everyone has read it.
  return c.shmBarrier("alltoall splits read");
}

Status shmAlltoallData(SetComm& c, const void* in, size_t row_bytes, const SplitMatrix& matrix,
                       void* out) {
  LIGHTCC_RETURN_IF_ERROR(c.claimStaging());
  const int p = c.size();
  const size_t cap = 2 * c.chunk_bytes;
  // For sender j: where my slice starts in its input, how long it is, and its input's size.
  std::vector<size_t> src_off(p), len(p), out_off(p), total(p);
  size_t rounds = 0;
  for (int j = 0; j < p; ++j) {
    size_t tot = 0;
    for (int k = 0; k < p; ++k) {
      if (k == c.me) src_off[j] = tot;
      tot += static_cast<size_t>(matrix[j][k]) * row_bytes;
    }
    len[j] = static_cast<size_t>(matrix[j][c.me]) * row_bytes;
    out_off[j] = j == 0 ? 0 : out_off[j - 1] + len[j - 1];
    total[j] = tot;
    rounds = std::max(rounds, ceilDiv(tot, cap));
  }
  char* dst = static_cast<char*>(out);
  if (len[c.me] > 0) {
    std::memcpy(dst + out_off[c.me], static_cast<const char*>(in) + src_off[c.me], len[c.me]);
  }
  for (size_t r = 0; r < rounds; ++r) {
    const size_t base = r * cap;
    if (base < total[c.me]) {
      std::memcpy(c.staging(c.me, 0), static_cast<const char*>(in) + base,
                  std::min(cap, total[c.me] - base));
    }
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("alltoall copy-in"));
    for (int j = 0; j < p; ++j) {
      if (j == c.me) continue;
      const size_t a = std::max(src_off[j], base);
      const size_t b = std::min(src_off[j] + len[j], base + cap);
      if (b > a) std::memcpy(dst + out_off[j] + (a - src_off[j]), c.staging(j, 0) + (a - base), b - a);
    }
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("alltoall copy-out"));
  }
  return Status::OK();
}

Status shmReducescatterShares(SetComm& c, const std::vector<IoVec>& shares, void* out, const ReduceSpec& spec) {
  LIGHTCC_RETURN_IF_ERROR(c.claimStaging());
  const int p = c.size();
  const size_t esize = dtypeSize(spec.dtype);
  // Each window holds a piece of every member's share, so all members reduce at once (a window
  // cut from the flat input would hand one member all the work while the others wait). Pieces
  // start on cache lines.
  const size_t per = std::max<size_t>(64, (2 * c.chunk_bytes / p) / 64 * 64);
  size_t most = 0;
  for (const IoVec& v : shares) most = std::max(most, v.total());
  const size_t mine = shares[c.me].total();
  std::vector<const void*> srcs(p);
  for (size_t base = 0; base < most; base += per) {
    char* stage = c.staging(c.me, 0);
    for (int j = 0; j < p; ++j) {
      if (base < shares[j].total()) shares[j].gather(base, std::min(per, shares[j].total() - base), stage + j * per);
    }
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("reducescatter copy-in"));
    if (base < mine) {
      const size_t n = std::min(per, mine - base) / esize;
      for (int k = 0; k < p; ++k) srcs[k] = c.staging(k, 0) + c.me * per;
      char* dst = static_cast<char*>(out) + base;
      kernels::reduceN(dst, srcs.data(), p, n, spec.dtype, spec.op, spec.prescale, spec.postscale);
      kernels::divideIntegers(dst, n, spec.dtype, spec.int_divisor);
    }
    LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("reducescatter reduce"));
  }
  return Status::OK();
}

Status shmReducescatter(SetComm& c, const void* in, void* out, const std::vector<int64_t>& rows,
                        size_t row_elems, const ReduceSpec& spec) {
  const size_t row_bytes = row_elems * dtypeSize(spec.dtype);
  std::vector<IoVec> shares(c.size());
  const char* at = static_cast<const char*>(in);
  for (int j = 0; j < c.size(); ++j) {
    const size_t bytes = static_cast<size_t>(rows[j]) * row_bytes;
    shares[j].add(at, nullptr, bytes);
    at += bytes;
  }
  return shmReducescatterShares(c, shares, out, spec);
}

}  // namespace lightcc
