// Allreduce by cross-memory attach: the published address lists, the share reduction and the gather (see the header).
#include "algorithms/cma_allreduce.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/reduce.h"
#include "transport/shm/cma.h"

namespace lightcc {
namespace {

// One tensor of a member's fused operation, as it publishes it in its meta area.
struct PublishedSegment {
  uint64_t in;
  uint64_t out;
  uint64_t bytes;
};
struct Published {
  uint64_t count;
  PublishedSegment segs[1];  // `count` of them
};
constexpr size_t kMaxSegments = (shm::kMetaBytes - sizeof(uint64_t)) / sizeof(PublishedSegment);

// Bytes of the peers' inputs read per reduction step: small enough to stay in cache until reduced.
constexpr size_t kChunkBytes = 256 << 10;

void publish(const SetComm& c, const IoVec& io) {
  auto* pub = reinterpret_cast<Published*>(c.meta(c.me));
  pub->count = io.segments().size();
  for (size_t i = 0; i < io.segments().size(); ++i) {
    const IoSegment& s = io.segments()[i];
    pub->segs[i] = {reinterpret_cast<uintptr_t>(s.in), reinterpret_cast<uintptr_t>(s.out), s.bytes};
  }
}

// Member m's ranges (its inputs, or its outputs) holding bytes [off, off+n) of the operation.
std::vector<iovec> rangesOf(const SetComm& c, int m, bool outputs, size_t off, size_t n) {
  const auto* pub = reinterpret_cast<const Published*>(c.meta(m));
  std::vector<iovec> v;
  size_t start = 0;
  for (uint64_t i = 0; i < pub->count && n > 0; ++i) {
    const PublishedSegment& s = pub->segs[i];
    if (off < start + s.bytes) {
      const size_t skip = off - start, len = std::min<size_t>(n, s.bytes - skip);
      v.push_back({reinterpret_cast<char*>(outputs ? s.out : s.in) + skip, len});
      off += len;
      n -= len;
    }
    start += s.bytes;
  }
  return v;
}

Status readFrom(const SetComm& c, int m, const std::vector<iovec>& local, const std::vector<iovec>& remote) {
  const int li = c.local_index[m];
  return shm::cmaRead(c.host->header(li)->pid, local, remote).withContext("reading " + c.host->describeLocal(li));
}

// Elements [lo, hi) of `count` that member m reduces: shares of 16-element multiples, as staged.
std::pair<size_t, size_t> shareOf(size_t count, int p, int m) {
  const size_t part = std::max<size_t>((((count + p - 1) / p) + 15) / 16 * 16, 1);
  const size_t lo = std::min(count, static_cast<size_t>(m) * part);
  return {lo, std::min(count, lo + part)};
}

}  // namespace

bool cmaAllreduceApplies(const SetComm& c, const IoVec& io) {
  if (c.size() < 2 || io.segments().size() > kMaxSegments) return false;
  for (int m = 0; m < c.size(); ++m) {
    if (c.host->header(c.local_index[m])->cma_ok.load(std::memory_order_acquire) != shm::kCmaOk) return false;
  }
  return true;
}

Status cmaAllreduce(SetComm& c, const IoVec& io, const ReduceSpec& spec) {
  const int p = c.size();
  const size_t esize = dtypeSize(spec.dtype);
  const size_t count = io.total() / esize;
  publish(c, io);
  LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("allreduce publish"));
  const auto [lo, hi] = shareOf(count, p, c.me);
  const size_t step = std::max<size_t>(kChunkBytes / esize, 1);
  // Reused by this thread's later calls: a fresh buffer would fault its pages in on every call.
  thread_local std::vector<char> peers_in;
  peers_in.resize(std::max(peers_in.size(), static_cast<size_t>(p) * step * esize));
  std::vector<const void*> srcs(p);
  for (size_t e0 = lo; e0 < hi; e0 += step) {
    const size_t n = std::min(step, hi - e0);
    for (int j = 0; j < p; ++j) {
      if (j == c.me) continue;
      const std::vector<iovec> local = {{peers_in.data() + j * step * esize, n * esize}};
      LIGHTCC_RETURN_IF_ERROR(readFrom(c, j, local, rangesOf(c, j, false, e0 * esize, n * esize)));
    }
    io.forEachPiece(e0 * esize, n * esize, [&](const char* in, char* out, size_t len, size_t done) {
      for (int j = 0; j < p; ++j) srcs[j] = j == c.me ? in : peers_in.data() + j * step * esize + done;
      kernels::reduceN(out, srcs.data(), p, len / esize, spec.dtype, spec.op, spec.prescale, spec.postscale);
      kernels::divideIntegers(out, len / esize, spec.dtype, spec.int_divisor);
    });
  }
  LIGHTCC_RETURN_IF_ERROR(c.shmBarrier("allreduce reduce"));
  for (int j = 0; j < p; ++j) {
    const auto [jlo, jhi] = shareOf(count, p, j);
    if (j == c.me || jhi == jlo) continue;
    std::vector<iovec> local;
    io.forEachPiece(jlo * esize, (jhi - jlo) * esize,
                    [&](const char*, char* out, size_t len, size_t) { local.push_back({out, len}); });
    LIGHTCC_RETURN_IF_ERROR(readFrom(c, j, local, rangesOf(c, j, true, jlo * esize, (jhi - jlo) * esize)));
  }
  // Nobody may return (and let its caller change or free the tensors) before all have read them.
  return c.shmBarrier("allreduce copy-out");
}

}  // namespace lightcc
