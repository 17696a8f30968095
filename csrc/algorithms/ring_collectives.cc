// Link collectives: ring allreduce/allgather/reducescatter, chain broadcast, direct alltoall.
#include <algorithm>
#include <cstring>

#include "algorithms/collectives.h"
#include "algorithms/pipelined_ring.h"
#include "kernels/reduce.h"

namespace lightcc {
namespace {

Link* nextLink(const SetComm& c) { return c.link((c.me + 1) % c.size()); }
Link* prevLink(const SetComm& c) { return c.link((c.me - 1 + c.size()) % c.size()); }

// Element segments [start, start+len) of a ring over `count` elements.
void segments(size_t count, int p, std::vector<size_t>* start, std::vector<size_t>* len) {
  start->assign(p, 0);
  len->assign(p, count / p);
  for (int i = 0; i < static_cast<int>(count % p); ++i) ++(*len)[i];
  for (int i = 1; i < p; ++i) (*start)[i] = (*start)[i - 1] + (*len)[i - 1];
}

// The reduce-scatter half of a ring: after it, member me holds the full reduction of its own
// segment me (at step s it sends segment me-s-1, already holding s contributions, and adds the
// incoming segment me-s-2). Reduction order differs per segment, but each segment is reduced once
// and then copied, so all members end bit-identical.
Status ringReduceScatterPhase(SetComm& c, char* buf, const std::vector<size_t>& start,
                              const std::vector<size_t>& len, const ReduceSpec& spec) {
  const int p = c.size();
  const size_t esize = dtypeSize(spec.dtype);
  size_t max_len = 0;
  for (size_t l : len) max_len = std::max(max_len, l);
  std::vector<char> tmp(max_len * esize);
  for (int s = 0; s < p - 1; ++s) {
    const int send_seg = ((c.me - s - 1) % p + 2 * p) % p;
    const int recv_seg = ((c.me - s - 2) % p + 2 * p) % p;
    std::vector<P2POp> ops = {
        {nextLink(c), true, buf + start[send_seg] * esize, len[send_seg] * esize},
        {prevLink(c), false, tmp.data(), len[recv_seg] * esize}};
    LIGHTCC_RETURN_IF_ERROR(runP2P(c, ops, "ring reduce-scatter step"));
    char* acc = buf + start[recv_seg] * esize;
    const void* srcs[2] = {acc, tmp.data()};
    kernels::reduceN(acc, srcs, 2, len[recv_seg], spec.dtype, spec.op);
  }
  return Status::OK();
}

}  // namespace

Status ringAllreduce(SetComm& c, void* data, size_t count, const ReduceSpec& spec) {
  const int p = c.size();
  const size_t esize = dtypeSize(spec.dtype);
  char* buf = static_cast<char*>(data);
  if (spec.prescale != 1.0) kernels::scale(buf, buf, count, spec.dtype, spec.prescale);
  if (p > 1) {
    std::vector<size_t> start, len;
    segments(count, p, &start, &len);
    const size_t chunks = ringChunks(len.front() * esize, c.chunk_bytes);
    if (chunks > 1) return pipelinedRingAllreduce(c, buf, nullptr, start, len, chunks, spec);
    LIGHTCC_RETURN_IF_ERROR(ringReduceScatterPhase(c, buf, start, len, spec));
    if (spec.postscale != 1.0) {
      kernels::scale(buf + start[c.me] * esize, buf + start[c.me] * esize, len[c.me], spec.dtype,
                     spec.postscale);
    }
    kernels::divideIntegers(buf + start[c.me] * esize, len[c.me], spec.dtype, spec.int_divisor);
    for (int s = 0; s < p - 1; ++s) {
      const int send_seg = (c.me - s + p) % p;
      const int recv_seg = (c.me - s - 1 + p) % p;
      std::vector<P2POp> ops = {
          {nextLink(c), true, buf + start[send_seg] * esize, len[send_seg] * esize},
          {prevLink(c), false, buf + start[recv_seg] * esize, len[recv_seg] * esize}};
      LIGHTCC_RETURN_IF_ERROR(runP2P(c, ops, "ring allgather step"));
    }
  } else if (spec.postscale != 1.0) {
    kernels::scale(buf, buf, count, spec.dtype, spec.postscale);
  }
  if (p == 1) kernels::divideIntegers(buf, count, spec.dtype, spec.int_divisor);
  return Status::OK();
}

Status ringAllreduce(SetComm& c, const IoVec& io, std::vector<char>& scratch, const ReduceSpec& spec) {
  const size_t count = io.total() / dtypeSize(spec.dtype);
  const int p = c.size();
  if (p > 1) {
    std::vector<size_t> start, len;
    segments(count, p, &start, &len);
    const size_t chunks = ringChunks(len.front() * dtypeSize(spec.dtype), c.chunk_bytes);
    if (chunks > 1) {
      char* area = io.single() ? io.segments().front().out : nullptr;
      if (area == nullptr) {
        if (scratch.size() < io.total()) scratch.resize(io.total());
        area = scratch.data();
      }
      return pipelinedRingAllreduce(c, area, &io, start, len, chunks, spec);
    }
  }
  char* buf = io.stage(scratch);
  LIGHTCC_RETURN_IF_ERROR(ringAllreduce(c, buf, count, spec));
  io.unstage(buf);
  return Status::OK();
}

Status ringAllgather(SetComm& c, const void* in, const std::vector<size_t>& piece_bytes, void* out) {
  const int p = c.size();
  std::vector<size_t> offs(p, 0);
  for (int j = 1; j < p; ++j) offs[j] = offs[j - 1] + piece_bytes[j - 1];
  char* dst = static_cast<char*>(out);
  if (piece_bytes[c.me] > 0 && dst + offs[c.me] != in) {
    std::memcpy(dst + offs[c.me], in, piece_bytes[c.me]);
  }
  for (int s = 0; s < p - 1; ++s) {
    const int send_piece = (c.me - s + p) % p;
    const int recv_piece = (c.me - s - 1 + p) % p;
    std::vector<P2POp> ops = {
        {nextLink(c), true, dst + offs[send_piece], piece_bytes[send_piece]},
        {prevLink(c), false, dst + offs[recv_piece], piece_bytes[recv_piece]}};
    LIGHTCC_RETURN_IF_ERROR(runP2P(c, ops, "ring allgather step"));
  }
  return Status::OK();
}

Status chainBroadcast(SetComm& c, void* data, size_t bytes, int root_member) {
  const int p = c.size();
  const int pos = (c.me - root_member + p) % p;
  char* buf = static_cast<char*>(data);
  const size_t piece = std::max<size_t>(c.chunk_bytes / 4, 64 << 10);
  const size_t pieces = std::max<size_t>(1, (bytes + piece - 1) / piece);
  // Receive piece k and forward piece k-1 together, so the chain stays busy.
  for (size_t k = 0; k <= pieces; ++k) {
    std::vector<P2POp> ops;
    if (pos > 0 && k < pieces) {
      size_t off = k * piece;
      ops.push_back({prevLink(c), false, buf + off, std::min(piece, bytes - std::min(bytes, off))});
    }
    if (pos < p - 1 && k >= 1) {
      size_t off = (k - 1) * piece;
      ops.push_back({nextLink(c), true, buf + off, std::min(piece, bytes - std::min(bytes, off))});
    }
    if (!ops.empty()) LIGHTCC_RETURN_IF_ERROR(runP2P(c, ops, "broadcast chain step"));
  }
  return Status::OK();
}

Status linkExchangeSplits(SetComm& c, const std::vector<int64_t>& send_rows, SplitMatrix* matrix) {
  const int p = c.size();
  matrix->assign(p, std::vector<int64_t>(p));
  (*matrix)[c.me] = send_rows;
  std::vector<P2POp> ops;
  for (int j = 0; j < p; ++j) {
    if (j == c.me) continue;
    ops.push_back({c.link(j), true, const_cast<int64_t*>(send_rows.data()), sizeof(int64_t) * p});
    ops.push_back({c.link(j), false, (*matrix)[j].data(), sizeof(int64_t) * p});
  }
  return runP2P(c, ops, "alltoall split exchange");
}

Status linkAlltoallData(SetComm& c, const void* in, size_t row_bytes, const SplitMatrix& matrix,
                        void* out) {
  const int p = c.size();
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  std::vector<size_t> send_off(p, 0), recv_off(p, 0);
  for (int j = 1; j < p; ++j) {
    send_off[j] = send_off[j - 1] + static_cast<size_t>(matrix[c.me][j - 1]) * row_bytes;
    recv_off[j] = recv_off[j - 1] + static_cast<size_t>(matrix[j - 1][c.me]) * row_bytes;
  }
  std::memcpy(dst + recv_off[c.me], src + send_off[c.me], static_cast<size_t>(matrix[c.me][c.me]) * row_bytes);
  std::vector<P2POp> ops;
  for (int j = 0; j < p; ++j) {
    if (j == c.me) continue;
    ops.push_back({c.link(j), true, const_cast<char*>(src + send_off[j]),
                   static_cast<size_t>(matrix[c.me][j]) * row_bytes});
    ops.push_back({c.link(j), false, dst + recv_off[j], static_cast<size_t>(matrix[j][c.me]) * row_bytes});
  }
  return runP2P(c, ops, "alltoall exchange");
}

RowSegments rowSegments(const std::vector<int64_t>& rows, size_t row_elems) {
  RowSegments s;
  for (int64_t r : rows) {
    s.start.push_back(s.total);
    s.len.push_back(static_cast<size_t>(r) * row_elems);
    s.total += s.len.back();
  }
  return s;
}

namespace {
constexpr size_t kKeptWorkBytes = size_t{256} << 20;

// The ring over `work`: the input is `in`, copied in as needed, or `work` itself (then it is
// overwritten). Large segments take the chunked pipeline (the link never idles between steps),
// which copies and prescales each chunk of the input as it first needs it and applies the
// postscale itself. Chunks are cut from the smallest segment so every chunk holds elements.
Status reducescatterOver(SetComm& c, const void* in, char* work, void* out, const RowSegments& s,
                         const ReduceSpec& spec) {
  const int p = c.size();
  const size_t esize = dtypeSize(spec.dtype);
  const size_t chunks = p > 1 ? ringChunks(*std::min_element(s.len.begin(), s.len.end()) * esize, c.chunk_bytes) : 1;
  if (chunks > 1) {
    IoVec io;
    io.add(in, work, s.total * esize);
    LIGHTCC_RETURN_IF_ERROR(pipelinedRingReducescatter(c, work, &io, s.start, s.len, chunks, spec));
    std::memcpy(out, work + s.start[c.me] * esize, s.len[c.me] * esize);
    return Status::OK();
  }
  kernels::scale(work, in, s.total, spec.dtype, spec.prescale);
  if (p > 1) LIGHTCC_RETURN_IF_ERROR(ringReduceScatterPhase(c, work, s.start, s.len, spec));
  kernels::scale(out, work + s.start[c.me] * esize, s.len[c.me], spec.dtype, spec.postscale);
  kernels::divideIntegers(out, s.len[c.me], spec.dtype, spec.int_divisor);
  return Status::OK();
}

}  // namespace

Status ringReducescatter(SetComm& c, const void* in, void* out, const std::vector<int64_t>& rows,
                         size_t row_elems, const ReduceSpec& spec) {
  const RowSegments s = rowSegments(rows, row_elems);
  const size_t bytes = s.total * dtypeSize(spec.dtype);
  // The work area is kept by this thread for the next call up to kKeptWorkBytes: a fresh one would
  // fault its pages in every time.
  thread_local std::vector<char> kept;
  std::vector<char> once;
  std::vector<char>& work = bytes <= kKeptWorkBytes ? kept : once;
  if (work.size() < bytes) work.resize(bytes);
  return reducescatterOver(c, in, work.data(), out, s, spec);
}

Status ringReducescatterInPlace(SetComm& c, void* buf, void* out, const std::vector<int64_t>& rows,
                                size_t row_elems, const ReduceSpec& spec) {
  return reducescatterOver(c, buf, static_cast<char*>(buf), out, rowSegments(rows, row_elems), spec);
}

}  // namespace lightcc
