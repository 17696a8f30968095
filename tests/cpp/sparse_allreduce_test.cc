// Tests sparseAllreduce (gTop-k merge by recursive doubling) with ranks as threads over in-memory
// links (fake_link.h): identical results on every rank, error feedback that conserves mass, the
// bytes each rank sends, fused segments equal to separate runs, 16-bit values on the wire, a
// peer's bad indices, and the byte rule the cost model falls back to dense with.
//
// Sizes 1 to 8, odd ones included (the fold and unfold of the members past a power of two).
// Every wait has the host group's timeout (a hang fails the test); each rank's shared-memory area
// is unlinked as soon as it is made. tests/single/test_cpp_units.py builds and runs it.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/sparse_allreduce.h"
#include "check.h"
#include "engine/cost_model.h"
#include "fake_link.h"
#include "kernels/half.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

// One thread-rank: its host group, links and the set's communicator.
struct Rank {
  std::unique_ptr<shm::HostGroup> host;
  std::vector<std::unique_ptr<Link>> links;
  SetComm comm;

  Rank(int rank, int size, testing::FakeFabric& fabric) : host(testing::makeThreadHost("sparsetest", rank)) {
    fabric.setReader(rank, host.get());
    comm.ranks.resize(static_cast<size_t>(size));
    comm.local_index.assign(static_cast<size_t>(size), -1);
    comm.local_index[static_cast<size_t>(rank)] = 0;
    comm.me = rank;
    comm.host = host.get();
    comm.links.assign(static_cast<size_t>(size), nullptr);
    for (int r = 0; r < size; ++r) {
      comm.ranks[static_cast<size_t>(r)] = r;
      if (r == rank) continue;
      links.push_back(fabric.link(rank, r));
      comm.links[static_cast<size_t>(r)] = links.back().get();
    }
  }
};

// Runs body(rank) on `size` threads.
void runRanks(int size, const std::function<void(Rank&)>& body) {
  testing::FakeFabric fabric(size);
  std::vector<std::unique_ptr<Rank>> ranks;
  for (int r = 0; r < size; ++r) ranks.push_back(std::make_unique<Rank>(r, size, fabric));
  std::vector<std::thread> threads;
  for (auto& rank : ranks) {
    Rank* me = rank.get();
    threads.emplace_back([me, &body] { body(*me); });
  }
  for (auto& t : threads) t.join();
}

float fromWire(const std::vector<char>& buf, size_t i, DataType dtype) {
  uint16_t h;
  switch (dtype) {
    case DataType::kFloat16: std::memcpy(&h, &buf[2 * i], 2); return kernels::halfToFloat(h);
    case DataType::kBFloat16: std::memcpy(&h, &buf[2 * i], 2); return kernels::bf16ToFloat(h);
    default: {
      float f;
      std::memcpy(&f, &buf[4 * i], 4);
      return f;
    }
  }
}

void toWire(std::vector<char>* buf, size_t i, float v, DataType dtype) {
  const uint16_t h = dtype == DataType::kFloat16 ? kernels::floatToHalf(v) : kernels::floatToBf16(v);
  if (dtype == DataType::kFloat32) {
    std::memcpy(&(*buf)[4 * i], &v, 4);
  } else {
    std::memcpy(&(*buf)[2 * i], &h, 2);
  }
}

// A rank's gradient at a step: Gaussian, a few large entries so the top-k has something to find.
std::vector<char> gradient(int rank, int step, size_t count, DataType dtype) {
  std::mt19937 rng(static_cast<uint32_t>(1000 * step + rank + 1));
  std::normal_distribution<float> normal;
  std::vector<char> g(count * dtypeSize(dtype));
  for (size_t i = 0; i < count; ++i) toWire(&g, i, normal(rng) * (i % 97 == 0 ? 8.0f : 1.0f), dtype);
  return g;
}

SparseLayout layoutOf(const std::vector<size_t>& counts, double density, DataType dtype) {
  SparseLayout l;
  l.dtype = dtype;
  size_t offset = 0;
  for (size_t c : counts) {
    l.segments.push_back({offset, c, c == 0 ? 0 : kernels::topkK(c, density)});
    offset += c;
  }
  return l;
}

struct RunResult {
  std::vector<std::vector<char>> outputs;  // [rank*steps + step]
  std::vector<std::vector<float>> residuals;
  std::vector<uint64_t> sent;
  std::vector<std::string> errors;
};

// `steps` exchanges of every rank's gradients over `size` thread-ranks.
RunResult run(int size, const SparseLayout& layout, int steps) {
  const size_t count = layout.count(), esize = dtypeSize(layout.dtype);
  RunResult res;
  res.outputs.resize(static_cast<size_t>(size * steps));
  res.residuals.resize(static_cast<size_t>(size));
  res.sent.resize(static_cast<size_t>(size));
  res.errors.resize(static_cast<size_t>(size));
  runRanks(size, [&](Rank& r) {
    const int me = r.comm.me;
    std::vector<float> residual(count, 0.0f);
    SparseScratch scratch;
    for (int s = 0; s < steps; ++s) {
      std::vector<char> g = gradient(me, s, count, layout.dtype), out(count * esize);
      TopkParams params;
      params.seed = static_cast<uint64_t>(s * 31 + me);
      const Status st = sparseAllreduce(r.comm, layout, g.data(), 1.0f, out.data(), {residual.data(), nullptr},
                                        params, scratch);
      if (!st.ok()) res.errors[static_cast<size_t>(me)] = st.message();
      res.outputs[static_cast<size_t>(me * steps + s)] = std::move(out);
    }
    res.residuals[static_cast<size_t>(me)] = residual;
    res.sent[static_cast<size_t>(me)] = r.comm.sent_bytes;
  });
  return res;
}

void testExchange(int size, DataType dtype) {
  const std::string at = std::to_string(size) + " ranks, " + dtypeName(dtype);
  const SparseLayout layout = layoutOf({3000, 37, 1}, 0.01, dtype);
  const int steps = 3;
  const RunResult res = run(size, layout, steps);
  for (const std::string& e : res.errors) check(e.empty(), at + ": no error (" + e + ")");
  const size_t count = layout.count();
  std::vector<double> delivered(count, 0.0), contributed(count, 0.0);
  for (int s = 0; s < steps; ++s) {
    const std::vector<char>& first = res.outputs[static_cast<size_t>(s)];
    bool same = true;
    for (int q = 0; q < size; ++q) same = same && res.outputs[static_cast<size_t>(q * steps + s)] == first;
    check(same, at + ": step " + std::to_string(s) + " identical on every rank");
    for (const SparseSegment& seg : layout.segments) {
      size_t nz = 0;
      for (size_t i = seg.offset; i < seg.offset + seg.count; ++i) nz += fromWire(first, i, dtype) != 0.0f;
      check(nz <= seg.k, at + ": a segment keeps at most its k pairs");
    }
    for (size_t i = 0; i < count; ++i) delivered[i] += fromWire(first, i, dtype);
    for (int q = 0; q < size; ++q) {
      const std::vector<char> g = gradient(q, s, count, dtype);
      for (size_t i = 0; i < count; ++i) contributed[i] += fromWire(g, i, dtype);
    }
  }
  // Error feedback conserves mass: delivered + every residual = contributed (16-bit merges round).
  double worst = 0.0;
  for (size_t i = 0; i < count; ++i) {
    double held = 0.0;
    for (int q = 0; q < size; ++q) held += res.residuals[static_cast<size_t>(q)][i];
    worst = std::max(worst, std::fabs(delivered[i] + held - contributed[i]));
  }
  const double tol = dtype == DataType::kFloat32 ? 1e-3 : dtype == DataType::kFloat16 ? 0.2 : 1.0;
  check(worst <= tol, at + ": delivered + residuals = contributed (worst " + std::to_string(worst) + ")");
  const uint64_t bound = sparseAllreduceBytes(size, layout.pairs(), dtypeSize(dtype)) * steps;
  const uint64_t most = *std::max_element(res.sent.begin(), res.sent.end());
  check(most == bound, at + ": the busiest rank sent " + std::to_string(most) + " bytes, header says " +
                           std::to_string(bound));
}

// Fused segments select and merge each on its own: the same bits as one exchange per tensor.
void testFusedEqualsSeparate() {
  for (int size : {3, 4}) {
    const SparseLayout fused = layoutOf({500, 800}, 0.02, DataType::kFloat32);
    const RunResult both = run(size, fused, 1);
    bool same = true;
    runRanks(size, [&](Rank& r) {
      const int me = r.comm.me;
      const std::vector<char> g = gradient(me, 0, fused.count(), DataType::kFloat32);
      size_t offset = 0;
      for (size_t c : {size_t{500}, size_t{800}}) {
        const SparseLayout one = layoutOf({c}, 0.02, DataType::kFloat32);
        std::vector<float> residual(c, 0.0f), out(c);
        SparseScratch scratch;
        TopkParams params;
        params.seed = static_cast<uint64_t>(me);
        const Status st = sparseAllreduce(r.comm, one, g.data() + 4 * offset, 1.0f, out.data(),
                                          {residual.data(), nullptr}, params, scratch);
        const std::vector<char>& f = both.outputs[static_cast<size_t>(me)];
        if (!st.ok() || std::memcmp(out.data(), f.data() + 4 * offset, 4 * c) != 0) same = false;
        offset += c;
      }
    });
    check(same, std::to_string(size) + " ranks: a fused exchange equals one exchange per tensor");
  }
}

// Two ranks by hand: the top-k of the sum of both ranks' local top-k.
void testTwoRanksByHand() {
  const size_t count = 400, k = 8;
  const SparseLayout layout = layoutOf({count}, static_cast<double>(k) / count, DataType::kFloat32);
  const RunResult res = run(2, layout, 1);
  std::vector<float> merged(count, 0.0f);
  for (int q = 0; q < 2; ++q) {
    const std::vector<char> g = gradient(q, 0, count, DataType::kFloat32);
    std::vector<size_t> order(count);
    for (size_t i = 0; i < count; ++i) order[i] = i;
    auto mag = [&](size_t i) { return std::fabs(fromWire(g, i, DataType::kFloat32)); };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mag(a) > mag(b); });
    for (size_t j = 0; j < k; ++j) merged[order[j]] += fromWire(g, order[j], DataType::kFloat32);
  }
  std::vector<size_t> order(count);
  for (size_t i = 0; i < count; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return std::fabs(merged[a]) > std::fabs(merged[b]); });
  std::vector<float> want(count, 0.0f);
  for (size_t j = 0; j < k; ++j) want[order[j]] = merged[order[j]];
  check(std::memcmp(want.data(), res.outputs[0].data(), 4 * count) == 0, "2 ranks: top-k of the summed selections");
}

// A peer that sends indices out of range: the member names it and fails, and nothing hangs.
void testBadPeer() {
  const SparseLayout layout = layoutOf({100}, 0.05, DataType::kFloat32);
  std::string error;
  runRanks(2, [&](Rank& r) {
    std::vector<float> residual(100, 0.0f), out(100);
    std::vector<char> g = gradient(r.comm.me, 0, 100, DataType::kFloat32);
    if (r.comm.me == 1) {
      std::vector<char> junk(8 * layout.pairs(), '\xff'), back(junk.size());
      std::vector<P2POp> ops = {{r.comm.links[0], true, junk.data(), junk.size()},
                                {r.comm.links[0], false, back.data(), back.size()}};
      (void)runP2P(r.comm, ops, "junk");  // rank 0 fails on what it received; this side may too
      return;
    }
    SparseScratch scratch;
    error = sparseAllreduce(r.comm, layout, g.data(), 1.0f, out.data(), {residual.data(), nullptr}, TopkParams{},
                            scratch)
                .message();
  });
  check(error.find("rank 1") != std::string::npos && error.find("index") != std::string::npos,
        "a peer's out-of-range index is an error naming it: " + error);
}

void testByteRule() {
  const size_t count = 1 << 20;
  check(sparseMovesFewerBytes(1, count, 4, count), "one member: always the sparse path (residuals)");
  check(sparseMovesFewerBytes(64, count, 4, kernels::topkK(count, 0.01)), "64 ranks, 1 %: sparse moves less");
  check(!sparseMovesFewerBytes(64, count, 4, kernels::topkK(count, 0.25)), "64 ranks, 25 %: dense moves less");
  check(!sparseMovesFewerBytes(2, count, 2, kernels::topkK(count, 0.5)), "2 ranks, 50 % of fp16: dense");
  // Bytes of the busiest member: log2 rounds, one more (and survivor bits) past a power of two.
  check(sparseAllreduceBytes(16, 100, 4) == 4 * 800 && sparseAllreduceBytes(64, 100, 4) == 6 * 800,
        "16 -> 64 ranks: 4 -> 6 rounds");
  check(sparseAllreduceBytes(3, 100, 2) == 2 * 600 + 13, "3 ranks, fp16: fold + 1 round + unfold");
}

}  // namespace

int main() {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    for (int size : {1, 2, 3, 4, 5, 8}) testExchange(size, dtype);
  }
  testFusedEqualsSeparate();
  testTwoRanksByHand();
  testBadPeer();
  testByteRule();
  return testing::summary();
}
