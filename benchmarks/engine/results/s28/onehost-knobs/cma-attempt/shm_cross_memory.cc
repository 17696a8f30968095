// Shared-memory allreduce by cross-memory attach: peers read each other's tensors, nothing staged.
//
// DESIGN. The staging allreduce (shm_collectives.cc) moves every byte four times per rank: into
// staging, through the reduce, into staging again as a result, and out to the peers' tensors.
// Here each member posts where its tensors live (IoVec segments, in its meta area); then it reads
// its 1/p share of every peer's input straight from the peer's memory into a small cache-sized
// buffer (process_vm_readv), reduces it with its own input into its own output, and after one
// barrier reads every other share of the result from the peers' outputs into its own: each byte
// is copied once per reader and no window barriers are needed (three barriers in all, any size).
// Members reduce in member order from the same bytes as the staging path, so the results are
// bit-identical to it. In place is safe: during the reduce a member writes only its own share and
// peers read only theirs; the result is read after the barrier, and overwritten only then.
// The first eligible allreduce of a set probes the syscall on every member and the members agree
// (one more barrier, once); a refusal anywhere keeps the whole set on the staging path.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "algorithms/collectives.h"
#include "common/logging.h"
#include "kernels/reduce.h"
#include "transport/shm/cross_memory.h"

namespace lightcc {
namespace {

size_t ceilDiv(size_t a, size_t b) { return (a + b - 1) / b; }

constexpr uint64_t kNotPosted = ~uint64_t{0};
// Each peer's share is read in pieces this size, which the reduce then finds in cache.
constexpr size_t kPieceBytes = 256 << 10;

struct PostHeader {
  uint64_t segments;  // kNotPosted: too many to post, this operation stages
  int32_t verdict;    // the probe: 1 every read worked, -1 one failed (0 not probed)
  int32_t unused;
};
struct PostSegment {
  uint64_t in, out, bytes;
};
constexpr size_t kMaxSegments = (shm::kMetaBytes - sizeof(PostHeader)) / sizeof(PostSegment);

PostHeader* postOf(const SetComm& c, int member) { return reinterpret_cast<PostHeader*>(c.meta(member)); }
const PostSegment* segmentsOf(const PostHeader* h) { return reinterpret_cast<const PostSegment*>(h + 1); }

// A member's inputs (or outputs) over the virtual byte range [off, off + n), as remote iovecs.
std::vector<iovec> postedRange(const PostHeader* h, bool outputs, size_t off, size_t n) {
  std::vector<iovec> v;
  const PostSegment* s = segmentsOf(h);
  size_t start = 0;
  for (uint64_t i = 0; i < h->segments && n > 0; ++i) {
    const size_t end = start + s[i].bytes;
    if (off < end) {
      const size_t len = std::min(end - off, n);
      const uint64_t base = outputs ? s[i].out : s[i].in;
      v.push_back({reinterpret_cast<void*>(base + (off - start)), len});
      off += len;
      n -= len;
    }
    start = end;
  }
  return v;
}

std::vector<iovec> myOutputs(const IoVec& io, size_t off, size_t n) {
  std::vector<iovec> v;
  io.forEachPiece(off, n, [&](const char*, char* out, size_t len, size_t) { v.push_back({out, len}); });
  return v;
}

pid_t pidOf(const SetComm& c, int member) { return c.host->header(c.local_index[member])->pid; }
std::string nameOf(const SetComm& c, int member) { return c.host->describeLocal(c.local_index[member]); }

void post(const SetComm& c, const IoVec& io) {
  PostHeader* mine = postOf(c, c.me);
  const auto& segs = io.segments();
  mine->verdict = 0;
  if (segs.size() > kMaxSegments) {
    mine->segments = kNotPosted;
    return;
  }
  auto* out = reinterpret_cast<PostSegment*>(mine + 1);
  for (size_t i = 0; i < segs.size(); ++i) {
    out[i] = {reinterpret_cast<uint64_t>(segs[i].in), reinterpret_cast<uint64_t>(segs[i].out), segs[i].bytes};
  }
  mine->segments = segs.size();
}

// Reads one byte of every peer's first input; the members then agree on the outcome.
Status probe(SetComm& c) {
  std::string why;
  for (int j = 0; j < c.size() && why.empty(); ++j) {
    const PostHeader* h = postOf(c, j);
    if (j == c.me || h->segments == 0) continue;
    char byte = 0;
    Status st = shm::crossRead(pidOf(c, j), {{&byte, 1}}, postedRange(h, false, 0, 1), nameOf(c, j));
    if (!st.ok()) why = st.message();
  }
  postOf(c, c.me)->verdict = why.empty() ? 1 : -1;
  LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("cross-memory probe"));
  c.cma_state = 1;
  for (int j = 0; j < c.size(); ++j) {
    if (postOf(c, j)->verdict != 1) c.cma_state = -1;
  }
  if (c.cma_state > 0) {
    LIGHTCC_LOG(kInfo) << "process set " << c.id << ": large allreduces read the peers' tensors directly "
                       << "(cross-memory attach)";
  } else {
    LIGHTCC_LOG(kInfo) << "process set " << c.id << ": cross-memory attach unavailable on this host ("
                       << (why.empty() ? "refused on a peer" : why) << "); large allreduces stage through shared memory";
  }
  return Status::OK();
}

// My share: read every peer's input for it piece by piece, reduce with mine into my output.
Status reduceMyShare(const SetComm& c, const IoVec& io, const ReduceSpec& spec, size_t lo, size_t hi) {
  const int p = c.size();
  const size_t esize = dtypeSize(spec.dtype);
  const size_t piece = std::max<size_t>(kPieceBytes / esize, 1) * esize;
  thread_local std::vector<char> scratch;  // the engine's channel thread's, reused by every call
  if (scratch.size() < piece * p) scratch.resize(piece * p);
  std::vector<const void*> srcs(p);
  for (size_t off = lo; off < hi; off += piece) {
    const size_t n = std::min(piece, hi - off);
    for (int j = 0; j < p; ++j) {
      if (j == c.me) continue;
      LIGHTCC_RETURN_IF_ERROR(shm::crossRead(pidOf(c, j), {{scratch.data() + j * piece, n}},
                                             postedRange(postOf(c, j), false, off, n), nameOf(c, j)));
    }
    io.forEachPiece(off, n, [&](const char* in, char* out, size_t len, size_t done) {
      for (int j = 0; j < p; ++j) srcs[j] = j == c.me ? in : scratch.data() + j * piece + done;
      kernels::reduceN(out, srcs.data(), p, len / esize, spec.dtype, spec.op, spec.prescale, spec.postscale);
      kernels::divideIntegers(out, len / esize, spec.dtype, spec.int_divisor);
    });
  }
  return Status::OK();
}

}  // namespace

Status shmAllreduceCrossMemory(SetComm& c, const IoVec& io, const ReduceSpec& spec, bool* ran) {
  *ran = false;
  const int p = c.size();
  post(c, io);
  LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("cross-memory post"));
  for (int j = 0; j < p; ++j) {
    if (postOf(c, j)->segments == kNotPosted) return Status::OK();  // everyone sees it: all stage
  }
  if (c.cma_state == 0) LIGHTCC_RETURN_IF_ERROR(probe(c));
  if (c.cma_state < 0) return Status::OK();
  const size_t esize = dtypeSize(spec.dtype);
  const size_t count = io.total() / esize;
  // Shares are multiples of 16 elements, as on the staging path, so kernels start aligned.
  const size_t part = std::max<size_t>(ceilDiv(ceilDiv(count, p), 16) * 16, 1);
  auto share = [&](int m, size_t* lo, size_t* hi) {
    *lo = std::min(count, m * part) * esize;
    *hi = std::min(count, m * part + part) * esize;
  };
  size_t lo = 0, hi = 0;
  share(c.me, &lo, &hi);
  LIGHTCC_RETURN_IF_ERROR(reduceMyShare(c, io, spec, lo, hi));
  LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("cross-memory reduce"));
  for (int j = 0; j < p; ++j) {
    share(j, &lo, &hi);
    if (j == c.me || hi == lo) continue;
    LIGHTCC_RETURN_IF_ERROR(shm::crossRead(pidOf(c, j), myOutputs(io, lo, hi - lo),
                                           postedRange(postOf(c, j), true, lo, hi - lo), nameOf(c, j)));
  }
  // A member's tensors go back to its caller only once no peer reads them any more.
  LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("cross-memory copy-out"));
  *ran = true;
  return Status::OK();
}

}  // namespace lightcc
