// Tests the link collectives of ring_collectives.cc with ranks as threads over in-memory links
// (fake_link.h), as gloo tests its algorithms: ringAllreduce and ringReducescatter for every dtype
// and reduce op, pre/postscale and Average; ringAllgather with uneven and empty pieces, in place
// too; chainBroadcast from every root across its pipeline's piece boundaries; the alltoall split
// exchange and linkAlltoallData with uneven splits and empty slices; a broken link failing with
// the peer named. 1 to 8 ranks (odd ones included), sizes that do not divide by the rank count,
// zero-size parts. Every result is compared bit for bit with a reference computed here, from
// inputs whose reductions are exact in the dtype (small integers, quarters, factors of 2), so the
// ring's per-segment reduction order cannot excuse a difference.
// tests/single/test_cpp_units.py builds it against lightcc_core and runs it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/collectives.h"
#include "check.h"
#include "fake_link.h"
#include "kernels/half.h"

using namespace lightcc;
using lightcc::testing::check;
using lightcc::testing::ThreadRank;
using lightcc::testing::ThreadWorld;

namespace {

const std::vector<int> kRankCounts = {1, 2, 3, 4, 5, 7, 8};
const std::vector<DataType> kDtypes = {DataType::kUInt8,   DataType::kInt8,     DataType::kInt16,
                                       DataType::kUInt16,  DataType::kInt32,    DataType::kInt64,
                                       DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                       DataType::kFloat64, DataType::kBool};

std::string dtypeLabel(DataType t) { return "dtype " + std::to_string(static_cast<int>(t)); }
std::string opLabel(ReduceOp op) { return reduceOpName(op); }

bool isSigned(DataType t) {
  return t == DataType::kInt8 || t == DataType::kInt16 || t == DataType::kInt32 || t == DataType::kInt64 ||
         isFloatType(t);
}

// Element i of a typed buffer, as a double (every value these tests store is exact in double).
double load(const std::vector<char>& b, DataType t, size_t i) {
  const char* p = b.data() + i * dtypeSize(t);
  auto as = [p](auto v) {
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (t) {
    case DataType::kUInt8:
    case DataType::kBool: return as(uint8_t{});
    case DataType::kInt8: return as(int8_t{});
    case DataType::kInt16: return as(int16_t{});
    case DataType::kUInt16: return as(uint16_t{});
    case DataType::kInt32: return as(int32_t{});
    case DataType::kInt64: return static_cast<double>(as(int64_t{}));
    case DataType::kFloat16: return kernels::halfToFloat(as(uint16_t{}));
    case DataType::kBFloat16: return kernels::bf16ToFloat(as(uint16_t{}));
    case DataType::kFloat32: return as(float{});
    case DataType::kFloat64: return as(double{});
  }
  return 0;
}

// Stores v, which the caller has made representable in t (float16/bfloat16 round to nearest even).
void store(std::vector<char>& b, DataType t, size_t i, double v) {
  char* p = b.data() + i * dtypeSize(t);
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (t) {
    case DataType::kUInt8:
    case DataType::kBool: put(static_cast<uint8_t>(v)); break;
    case DataType::kInt8: put(static_cast<int8_t>(v)); break;
    case DataType::kInt16: put(static_cast<int16_t>(v)); break;
    case DataType::kUInt16: put(static_cast<uint16_t>(v)); break;
    case DataType::kInt32: put(static_cast<int32_t>(v)); break;
    case DataType::kInt64: put(static_cast<int64_t>(v)); break;
    case DataType::kFloat16: put(kernels::floatToHalf(static_cast<float>(v))); break;
    case DataType::kBFloat16: put(kernels::floatToBf16(static_cast<float>(v))); break;
    case DataType::kFloat32: put(static_cast<float>(v)); break;
    case DataType::kFloat64: put(v); break;
  }
}

// Rank r's element i for op: chosen so that any order of reduction is exact in t. Sums of at most
// 8 values in [-5, 5] (quarters added for float32/float64); products with at most three factors
// of 2 (and an occasional 0); min/max over a wider spread. Bool holds 0 or 1.
double inputValue(DataType t, ReduceOp op, int r, size_t i) {
  if (t == DataType::kBool) return static_cast<double>((i * 7 + static_cast<size_t>(r) * 3) % 5 == 0);
  const double shift = isSigned(t) ? 1.0 : 0.0;
  switch (op) {
    case ReduceOp::kProduct: {
      if (i % 17 == 5 && r == 1) return 0;
      const double sign = isSigned(t) && (i * 5 + static_cast<size_t>(r)) % 4 == 0 ? -1.0 : 1.0;
      return sign * ((i + static_cast<size_t>(r)) % 3 == 0 ? 2.0 : 1.0);
    }
    case ReduceOp::kMin:
    case ReduceOp::kMax: return static_cast<double>((static_cast<size_t>(r) * 37 + i * 11) % 23) - 11 * shift;
    default: {
      double v = static_cast<double>((static_cast<size_t>(r) * 7 + i * 3) % 11) - 5 * shift;
      if (t == DataType::kFloat32 || t == DataType::kFloat64) v += 0.25 * static_cast<double>((i + 2 * r) % 4);
      return v;
    }
  }
}

// Scaling as the kernels define it: floating types multiply in their accumulator type (float for
// 16-bit storage) and round once into storage; integers go through double and truncate.
double scaled(DataType t, double v, double factor) {
  if (factor == 1.0) return v;
  if (t == DataType::kFloat64) return v * factor;
  if (isFloatType(t)) return static_cast<float>(v) * static_cast<float>(factor);
  return std::trunc(v * factor);
}

// Element i of the reduction of every rank's input, as the engine's ReduceSpec asks for it.
double reference(const ReduceSpec& spec, int p, size_t i, ReduceOp input_op) {
  const DataType t = spec.dtype;
  double acc = 0;
  for (int r = 0; r < p; ++r) {
    std::vector<char> one(dtypeSize(t));
    store(one, t, 0, scaled(t, inputValue(t, input_op, r, i), spec.prescale));
    const double v = load(one, t, 0);
    if (r == 0) {
      acc = v;
      continue;
    }
    switch (spec.op) {
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kProduct: acc *= v; break;
      default: acc += v; break;
    }
  }
  std::vector<char> one(dtypeSize(t));
  store(one, t, 0, acc);
  double out = scaled(t, load(one, t, 0), spec.postscale);
  if (!isFloatType(t) && spec.int_divisor != 1) out = std::trunc(out / static_cast<double>(spec.int_divisor));
  return out;
}

// The spec the engine builds for (dtype, op) at p members (executor.cc's reduceSpecFor).
ReduceSpec specFor(DataType t, ReduceOp op, int p, double pre, double post) {
  ReduceSpec spec{t, op, pre, post};
  if (op == ReduceOp::kAverage) {
    spec.op = ReduceOp::kSum;
    if (isFloatType(t)) {
      spec.postscale /= p;
    } else {
      spec.int_divisor = p;
    }
  }
  return spec;
}

std::vector<ReduceOp> opsFor(DataType t) {
  if (t == DataType::kBool) return {ReduceOp::kMin, ReduceOp::kMax};
  return {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
}

// Pre/postscale pairs for op: none, and (for Sum) factors exact in every dtype.
std::vector<std::pair<double, double>> scalesFor(DataType t, ReduceOp op) {
  if (op != ReduceOp::kSum || t == DataType::kBool) return {{1.0, 1.0}};
  if (isFloatType(t)) return {{1.0, 1.0}, {0.5, 0.25}};
  return {{1.0, 1.0}, {2.0, 1.0}, {1.0, 3.0}};  // |sums| stay within int8 and uint8
}

// Statuses of one collective, collected from the rank threads.
struct Outcome {
  std::mutex mu;
  std::vector<std::string> errors;
  void note(const ThreadRank& r, const Status& st) {
    if (st.ok()) return;
    std::lock_guard<std::mutex> lock(mu);
    errors.push_back("rank " + std::to_string(r.comm.me) + ": " + st.message());
  }
  std::string what() const { return errors.empty() ? "" : " [" + errors.front() + "]"; }
};

void testAllreduce(ThreadWorld& w, DataType t, ReduceOp op, double pre, double post, size_t count) {
  const int p = w.size();
  const ReduceSpec spec = specFor(t, op, p, pre, post);
  const size_t es = dtypeSize(t);
  std::vector<std::vector<char>> bufs(p, std::vector<char>(count * es));
  for (int r = 0; r < p; ++r) {
    for (size_t i = 0; i < count; ++i) store(bufs[r], t, i, inputValue(t, op, r, i));
  }
  std::vector<char> want(count * es);
  for (size_t i = 0; i < count; ++i) store(want, t, i, reference(spec, p, i, op));
  Outcome out;
  w.run([&](ThreadRank& r) { out.note(r, ringAllreduce(r.comm, bufs[r.comm.me].data(), count, spec)); });
  bool exact = true;
  for (int r = 0; r < p; ++r) exact = exact && bufs[r] == want;
  check(out.errors.empty() && exact, "ringAllreduce " + dtypeLabel(t) + " " + opLabel(op) + " pre " +
                                         std::to_string(pre) + " post " + std::to_string(post) + ", " +
                                         std::to_string(count) + " elements at " + std::to_string(p) +
                                         " ranks: the reference, exactly, on every rank" + out.what());
}

// in_place: ringReducescatterInPlace over a scratch copy of the input, which it may overwrite.
void testReducescatter(ThreadWorld& w, DataType t, ReduceOp op, double pre, double post,
                       const std::vector<int64_t>& rows, size_t row_elems, bool in_place = false) {
  const int p = w.size();
  const ReduceSpec spec = specFor(t, op, p, pre, post);
  const size_t es = dtypeSize(t);
  std::vector<size_t> first(p + 1, 0);
  for (int j = 0; j < p; ++j) first[j + 1] = first[j] + static_cast<size_t>(rows[j]) * row_elems;
  const size_t total = first[p];
  std::vector<std::vector<char>> in(p, std::vector<char>(total * es)), got(p);
  for (int r = 0; r < p; ++r) {
    for (size_t i = 0; i < total; ++i) store(in[r], t, i, inputValue(t, op, r, i));
    got[r].assign((first[r + 1] - first[r]) * es + 1, '\x5a');  // one guard byte past the share
  }
  Outcome out;
  w.run([&](ThreadRank& r) {
    const int me = r.comm.me;
    if (!in_place) {
      out.note(r, ringReducescatter(r.comm, in[me].data(), got[me].data(), rows, row_elems, spec));
      return;
    }
    std::vector<char> scratch = in[me];
    out.note(r, ringReducescatterInPlace(r.comm, scratch.data(), got[me].data(), rows, row_elems, spec));
  });
  bool exact = true;
  std::string rows_text;
  for (int r = 0; r < p; ++r) {
    std::vector<char> want((first[r + 1] - first[r]) * es + 1, '\x5a');
    for (size_t i = first[r]; i < first[r + 1]; ++i) store(want, t, i - first[r], reference(spec, p, i, op));
    exact = exact && got[r] == want;
    rows_text += (r ? "," : "") + std::to_string(rows[r]);
  }
  check(out.errors.empty() && exact, std::string(in_place ? "ringReducescatterInPlace " : "ringReducescatter ") +
                                         dtypeLabel(t) + " " + opLabel(op) + " pre " +
                                         std::to_string(pre) + ", rows {" + rows_text + "} of " +
                                         std::to_string(row_elems) + " at " + std::to_string(p) +
                                         " ranks: each rank's share of the reference, exactly" + out.what());
}

// Byte k of rank r's piece (allgather, broadcast) or of what r sends rank d (alltoall).
char pattern(int r, int d, size_t k) { return static_cast<char>((r * 131 + d * 29 + k * 7 + k / 251) & 0xff); }

void testAllgather(ThreadWorld& w, const std::vector<size_t>& piece_bytes, bool in_place) {
  const int p = w.size();
  std::vector<size_t> offs(p + 1, 0);
  for (int j = 0; j < p; ++j) offs[j + 1] = offs[j] + piece_bytes[j];
  std::vector<std::vector<char>> in(p), out(p, std::vector<char>(offs[p], '\x11'));
  std::vector<char> want(offs[p]);
  for (int r = 0; r < p; ++r) {
    for (size_t k = 0; k < piece_bytes[r]; ++k) want[offs[r] + k] = pattern(r, 0, k);
    in[r].assign(want.begin() + static_cast<long>(offs[r]), want.begin() + static_cast<long>(offs[r + 1]));
    if (in_place) std::copy(in[r].begin(), in[r].end(), out[r].begin() + static_cast<long>(offs[r]));
  }
  Outcome o;
  w.run([&](ThreadRank& r) {
    const int me = r.comm.me;
    const void* src = in_place ? static_cast<const void*>(out[me].data() + offs[me]) : in[me].data();
    o.note(r, ringAllgather(r.comm, src, piece_bytes, out[me].data()));
  });
  bool exact = true;
  std::string sizes;
  for (int r = 0; r < p; ++r) {
    exact = exact && out[r] == want;
    sizes += (r ? "," : "") + std::to_string(piece_bytes[r]);
  }
  check(o.errors.empty() && exact, std::string("ringAllgather") + (in_place ? " in place" : "") + " of pieces {" +
                                       sizes + "} bytes at " + std::to_string(p) +
                                       " ranks: every piece in member order on every rank" + o.what());
}

void testBroadcast(ThreadWorld& w, size_t bytes, int root) {
  const int p = w.size();
  std::vector<char> want(bytes);
  for (size_t k = 0; k < bytes; ++k) want[k] = pattern(root, 1, k);
  std::vector<std::vector<char>> bufs(p, std::vector<char>(bytes, '\x22'));
  bufs[root] = want;
  Outcome o;
  w.run([&](ThreadRank& r) { o.note(r, chainBroadcast(r.comm, bufs[r.comm.me].data(), bytes, root)); });
  bool exact = true;
  for (int r = 0; r < p; ++r) exact = exact && bufs[r] == want;
  check(o.errors.empty() && exact, "chainBroadcast of " + std::to_string(bytes) + " bytes from root " +
                                       std::to_string(root) + " at " + std::to_string(p) +
                                       " ranks: the root's bytes on every rank" + o.what());
}

// rows(j, k): how many rows member j sends member k.
void testAlltoall(ThreadWorld& w, size_t row_bytes, const std::function<int64_t(int, int)>& rows,
                  const std::string& shape) {
  const int p = w.size();
  SplitMatrix truth(p, std::vector<int64_t>(p));
  for (int j = 0; j < p; ++j) {
    for (int k = 0; k < p; ++k) truth[j][k] = rows(j, k);
  }
  // Rank j's input: its slices for members 0..p-1 in order; member k's output: the slices sent to
  // it by members 0..p-1 in order.
  std::vector<std::vector<char>> in(p), want(p), got(p);
  for (int j = 0; j < p; ++j) {
    for (int k = 0; k < p; ++k) {
      for (size_t b = 0; b < static_cast<size_t>(truth[j][k]) * row_bytes; ++b) {
        in[j].push_back(pattern(j, k, b));
        want[k].push_back(pattern(j, k, b));
      }
    }
  }
  std::vector<SplitMatrix> seen(p);
  Outcome o;
  w.run([&](ThreadRank& r) {
    const int me = r.comm.me;
    Status st = linkExchangeSplits(r.comm, truth[me], &seen[me]);
    size_t recv_rows = 0;
    for (int j = 0; st.ok() && j < p; ++j) recv_rows += static_cast<size_t>(seen[me][j][me]);
    got[me].assign(recv_rows * row_bytes, '\x33');
    if (st.ok()) st = linkAlltoallData(r.comm, in[me].data(), row_bytes, seen[me], got[me].data());
    o.note(r, st);
  });
  bool splits = true, exact = true;
  for (int r = 0; r < p; ++r) {
    splits = splits && seen[r] == truth;
    exact = exact && got[r] == want[r];
  }
  const std::string at = " (" + shape + ", rows of " + std::to_string(row_bytes) + " bytes, " +
                         std::to_string(p) + " ranks)";
  check(o.errors.empty() && splits, "linkExchangeSplits: every rank learns the whole split matrix" + at + o.what());
  check(o.errors.empty() && exact, "linkAlltoallData: every rank receives its slices in member order" + at + o.what());
}

void testReductions(ThreadWorld& w) {
  const int p = w.size();
  const std::vector<size_t> counts = {0, 1, static_cast<size_t>(p) + 1, 2 * static_cast<size_t>(p) - 1, 1001};
  for (DataType t : kDtypes) {
    for (ReduceOp op : opsFor(t)) {
      for (auto [pre, post] : scalesFor(t, op)) {
        for (size_t n : counts) testAllreduce(w, t, op, pre, post, n);
        for (int64_t dim0 : {int64_t{0}, int64_t{1}, int64_t{p} + 1, int64_t{37}}) {
          testReducescatter(w, t, op, pre, post, reducescatterRows(dim0, p), 3);
        }
        // Shares the engine never makes but the algorithm accepts: uneven, empty ones between.
        std::vector<int64_t> uneven(p);
        for (int j = 0; j < p; ++j) uneven[j] = (j * 5 + 2) % 4;
        testReducescatter(w, t, op, pre, post, uneven, 1);
      }
    }
  }
  // Large enough for vector kernels and more than one 64 KiB segment per rank.
  testAllreduce(w, DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0, 100003);
  testAllreduce(w, DataType::kInt64, ReduceOp::kAverage, 1.0, 1.0, 40009);
  // Shares of two or more 16 KiB pieces take the chunked reduce-scatter: with scales, an integer
  // mean, and uneven shares whose chunks are cut from the smallest.
  for (int r = 0; r < p; ++r) w.rank(r).comm.chunk_bytes = 4096;
  // The in-place entry (the 2D reducescatter's ring over its host-summed lane) takes both paths too.
  std::vector<int64_t> lopsided(p);
  for (int j = 0; j < p; ++j) lopsided[j] = 2 + 3 * j;
  for (bool in_place : {false, true}) {
    testReducescatter(w, DataType::kFloat32, ReduceOp::kSum, 0.5, 0.25, reducescatterRows(3 * p + 1, p), 9001,
                      in_place);
    testReducescatter(w, DataType::kInt64, ReduceOp::kAverage, 1.0, 1.0, reducescatterRows(2 * p, p), 4099,
                      in_place);
    testReducescatter(w, DataType::kFloat32, ReduceOp::kMax, 1.0, 1.0, lopsided, 4097, in_place);
    testReducescatter(w, DataType::kBFloat16, ReduceOp::kSum, 0.5, 2.0, reducescatterRows(2 * p + 1, p), 3,
                      in_place);
  }
  for (int r = 0; r < p; ++r) w.rank(r).comm.chunk_bytes = 4 << 20;
}

void testExchanges(ThreadWorld& w) {
  const int p = w.size();
  auto pieces = [p](const std::function<size_t(int)>& f) {
    std::vector<size_t> v(p);
    for (int j = 0; j < p; ++j) v[j] = f(j);
    return v;
  };
  for (bool in_place : {false, true}) {
    testAllgather(w, pieces([](int) { return size_t{100}; }), in_place);
    testAllgather(w, pieces([](int j) { return static_cast<size_t>((j * 37) % 50); }), in_place);
    testAllgather(w, pieces([](int) { return size_t{0}; }), in_place);
    testAllgather(w, pieces([p](int j) { return j == p - 1 ? size_t{70001} : static_cast<size_t>(j); }), in_place);
  }
  // chunk_bytes 4 KiB makes the chain's piece its 64 KiB floor: sizes around 1, 2 and 3 pieces.
  for (int r = 0; r < p; ++r) w.rank(r).comm.chunk_bytes = 4096;
  for (int root = 0; root < p; ++root) {
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{1000}, size_t{65536}, size_t{65537}, size_t{196625}}) {
      testBroadcast(w, bytes, root);
    }
  }
  for (int r = 0; r < p; ++r) w.rank(r).comm.chunk_bytes = 4 << 20;
  testBroadcast(w, (1 << 20) + 3, p - 1);  // the default piece (1 MiB) and one more
  for (size_t row_bytes : {size_t{1}, size_t{12}}) {
    testAlltoall(w, row_bytes, [](int j, int k) { return int64_t{(j * 3 + k * 5 + 1) % 4}; }, "uneven, some empty");
    testAlltoall(w, row_bytes, [](int j, int k) { return int64_t{j == k ? 0 : j + 2 * k + 1}; }, "nothing to self");
    testAlltoall(w, row_bytes, [](int, int k) { return int64_t{k == 0 ? 5 : 0}; }, "all to member 0");
    testAlltoall(w, row_bytes, [](int, int) { return int64_t{0}; }, "all empty");
  }
  testAlltoall(w, 4096, [](int j, int k) { return int64_t{(j + k) % 3 * 9}; }, "large rows");
}

// A peer whose link breaks fails the ring step on both ends, each naming the other.
void testBrokenLink() {
  ThreadWorld w(2, "ringtest");
  w.fabric().mailbox(0, 1)->broken = true;
  w.fabric().mailbox(1, 0)->broken = true;
  std::vector<std::vector<float>> bufs(2, std::vector<float>(10, 1.0f));
  std::vector<Status> st(2);
  w.run([&](ThreadRank& r) {
    st[r.comm.me] = ringAllreduce(r.comm, bufs[r.comm.me].data(), 10, {DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0});
  });
  check(st[0].code() == StatusCode::kPeerFailure && st[0].message().find("rank 1 (host node1, fake)") != std::string::npos,
        "a broken ring link fails rank 0 naming rank 1 and its host: " + st[0].message());
  check(st[1].code() == StatusCode::kPeerFailure && st[1].message().find("rank 0 (host node0, fake)") != std::string::npos,
        "and rank 1 naming rank 0: " + st[1].message());
}

}  // namespace

int main() {
  for (int p : kRankCounts) {
    ThreadWorld w(p, "ringtest");
    check(w.ready(), "a shared-memory host group for each of " + std::to_string(p) + " thread-ranks");
    if (!w.ready()) continue;
    testReductions(w);
    testExchanges(w);
  }
  testBrokenLink();
  return testing::summary();
}
