// Checks the CPU top-k kernels (selection, scatter-add, residual, momentum) against scalar code.
//
// Build and run from the repository root (an indented line continues the command above it):
//   F="-std=c++17 -O2 -ffp-contract=off -Icsrc"
//   g++ $F -mavx2 -mf16c -c csrc/kernels/reduce_avx2.cc -o /tmp/lk_avx2.o
//   g++ $F -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mf16c -mprefer-vector-width=256
//       -c csrc/kernels/reduce_avx512.cc -o /tmp/lk_avx512.o
//   g++ $F csrc/kernels/topk_*.cc
//       csrc/kernels/{reduce_generic,reduce_scaled_int,integer_average,dispatch}.cc
//       csrc/common/dtype.cc tests/cpp/topk_test.cc /tmp/lk_avx2.o /tmp/lk_avx512.o
//       -o /tmp/topk_test
//   /tmp/topk_test              (exit 0 when everything passed; about a minute on one core)
// The topk_avx*.cc files carry their own target pragmas, so they need no -m flags.
//
// Selections run on every instruction set this CPU supports, through the automatic, the forced
// sampled and the forced exact path, for float32/float16/bfloat16, and must equal a reference
// built on std::nth_element: the k largest |v| (NaN above inf), ties to the lowest indices.
// Independently of that tie rule, every output is checked for exactly k strictly ascending
// indices, values copied bit for bit, and no unselected magnitude above a selected one.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "kernels/half.h"
#include "kernels/simd_dispatch.h"
#include "kernels/topk.h"
#include "kernels/topk_detail.h"
#include "kernels/topk_ops.h"

namespace lk = lightcc::kernels;
using lightcc::DataType;
using lk::TopkOutcome;
using lk::TopkPath;

namespace {

struct Tally {
  int passed = 0;
  int failed = 0;
  void check(bool ok, const std::string& what) {
    if (ok) {
      ++passed;
      return;
    }
    ++failed;
    if (failed <= 40) std::printf("FAIL: %s\n", what.c_str());
  }
};

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  double unit() { return double(next() >> 11) * 0x1p-53; }
  double normal() {
    return std::sqrt(-2 * std::log(1 - unit())) * std::cos(6.283185307179586 * unit());
  }
};

// ---- Reference: plain scalar code restating topk.h, sharing nothing with the kernels. ----

// Exact decoders (no half.h).
float halfValue(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (e == 31) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(float(m), -24);
  return sign * std::ldexp(float(1024 + m), e - 25);
}
float bf16Value(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// "a has the larger magnitude": NaN above everything, NaNs equal among themselves.
bool magGreater(float a, float b) {
  if (std::isnan(a)) return !std::isnan(b);
  return !std::isnan(b) && std::fabs(a) > std::fabs(b);
}
bool magEqual(float a, float b) { return !magGreater(a, b) && !magGreater(b, a); }

std::vector<uint32_t> referenceTopk(const std::vector<float>& v, size_t k) {
  std::vector<uint32_t> out;
  if (k == 0) return out;
  std::vector<float> m(v);
  std::nth_element(m.begin(), m.begin() + (k - 1), m.end(), magGreater);
  float kth = m[k - 1];
  size_t above = 0;
  for (float x : v) above += magGreater(x, kth);
  size_t ties = k - above;  // equal to the k-th: the first `ties` of them, by index
  for (size_t i = 0; i < v.size(); ++i) {
    if (magGreater(v[i], kth)) {
      out.push_back(uint32_t(i));
    } else if (magEqual(v[i], kth) && ties > 0) {
      out.push_back(uint32_t(i));
      --ties;
    }
  }
  return out;
}

// ---- Inputs ----

enum class Dist { kNormal, kUniform, kCauchy, kAllZero, kFewValues, kMostlyZero, kRamp, kNanInf };
const Dist kDists[] = {Dist::kNormal,    Dist::kUniform,    Dist::kCauchy, Dist::kAllZero,
                       Dist::kFewValues, Dist::kMostlyZero, Dist::kRamp,   Dist::kNanInf};
const char* distName(Dist d) {
  const char* names[] = {"normal", "uniform", "cauchy", "all-zero", "few-values", "mostly-zero",
                         "ramp", "nan-inf"};
  return names[int(d)];
}

std::vector<float> makeFloats(Dist d, size_t n, Rng& rng) {
  std::vector<float> v(n);
  const float few[] = {0, 0, 0, 0, 0, 0, 0, 0.5f, -0.5f, 1, -1, 2, -2, -0.0f};
  for (size_t i = 0; i < n; ++i) {
    switch (d) {
      case Dist::kNormal: v[i] = float(rng.normal() * 0.01); break;
      case Dist::kUniform: v[i] = float(rng.unit() * 2 - 1); break;
      case Dist::kCauchy: v[i] = float(std::tan(3.14159265 * (rng.unit() - 0.5)) * 1e-3); break;
      case Dist::kAllZero: v[i] = (i & 1) ? -0.0f : 0.0f; break;
      case Dist::kFewValues: v[i] = few[rng.next() % 14]; break;
      case Dist::kMostlyZero: v[i] = rng.next() % 100 == 0 ? float(rng.normal()) : 0.0f; break;
      case Dist::kRamp: v[i] = float(i % 1000) * ((i & 1) ? -1e-3f : 1e-3f); break;
      case Dist::kNanInf: v[i] = float(rng.normal()); break;
    }
  }
  if (d == Dist::kNanInf && n > 8) {
    v[n / 3] = NAN, v[n / 2] = INFINITY, v[n - 1] = -INFINITY, v[1] = NAN;
  }
  return v;
}

// One input in a dtype: the bytes the kernel sees, and their exact float values.
struct Input {
  DataType dtype;
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

Input encode(const std::vector<float>& f, DataType dtype) {
  Input in{dtype, {}, {}};
  size_t es = lightcc::dtypeSize(dtype);
  in.bytes.resize(f.size() * es);
  in.values.resize(f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    if (dtype == DataType::kFloat32) {
      std::memcpy(&in.bytes[i * 4], &f[i], 4);
      in.values[i] = f[i];
    } else {
      uint16_t h = dtype == DataType::kFloat16 ? lk::floatToHalf(f[i]) : lk::floatToBf16(f[i]);
      std::memcpy(&in.bytes[i * 2], &h, 2);
      in.values[i] = dtype == DataType::kFloat16 ? halfValue(h) : bf16Value(h);
    }
  }
  return in;
}

// ---- Selection checks ----

std::map<TopkOutcome, int> gOutcomes;  // which paths the runs reached (the test's own coverage)
int gLoweredSurvivors = 0;             // sampled runs that needed a lowered threshold

void checkSelection(Tally& t, const std::string& label, const Input& in, size_t k,
                    const std::vector<uint32_t>& want, const lk::TopkIsaKernels& isa,
                    TopkPath path, uint64_t seed, lk::TopkScratch& scratch) {
  constexpr uint32_t kGuardIdx = 0xdeadbeef;
  size_t es = lightcc::dtypeSize(in.dtype), n = in.values.size();
  std::vector<uint32_t> idx(k + 4, kGuardIdx);
  std::vector<uint8_t> vals((k + 4) * es, 0xa5);
  lk::selectTopkWith(isa, path, in.bytes.data(), in.dtype, n, k, seed, idx.data(), vals.data(),
                     scratch);
  ++gOutcomes[scratch.outcome];
  if (scratch.outcome == TopkOutcome::kSurvivors && scratch.filterPasses > 1) ++gLoweredSurvivors;

  bool guards = idx[k] == kGuardIdx && idx[k + 3] == kGuardIdx &&
                std::all_of(vals.begin() + k * es, vals.end(), [](uint8_t b) { return b == 0xa5; });
  bool ascending = true, bitsCopied = true;
  std::vector<char> chosen(n, 0);
  for (size_t i = 0; i < k; ++i) {
    if (idx[i] >= n || (i > 0 && idx[i] <= idx[i - 1])) {
      ascending = false;
      break;
    }
    chosen[idx[i]] = 1;
    bitsCopied &= std::memcmp(&vals[i * es], &in.bytes[size_t(idx[i]) * es], es) == 0;
  }
  // Tie-rule-free property: no unselected entry outranks any selected one.
  bool dominates = ascending;
  if (ascending && k > 0 && k < n) {
    float minChosen = NAN, maxOther = 0;
    bool haveMin = false, haveOther = false;
    for (size_t i = 0; i < n; ++i) {
      float x = in.values[i];
      if (chosen[i] && (!haveMin || magGreater(minChosen, x))) minChosen = x, haveMin = true;
      if (!chosen[i] && (!haveOther || magGreater(x, maxOther))) maxOther = x, haveOther = true;
    }
    dominates = !magGreater(maxOther, minChosen);
  }
  std::vector<uint32_t> got(idx.begin(), idx.begin() + k);
  std::string what = label + " isa=" + isa.name + " path=" + std::to_string(int(path)) +
                     " seed=" + std::to_string(seed);
  t.check(guards, what + ": wrote past k entries");
  t.check(ascending, what + ": indices not strictly ascending / in range");
  t.check(bitsCopied, what + ": values not copied bit for bit");
  t.check(dominates, what + ": an unselected entry outranks a selected one");
  t.check(got == want, what + ": differs from the nth_element reference");
}

std::vector<size_t> ksFor(size_t n) {
  std::vector<size_t> ks = {1, n, n - 1, lk::topkK(n, 0.001), lk::topkK(n, 0.01),
                            lk::topkK(n, 0.1), lk::topkK(n, 0.25), lk::topkK(n, 0.5)};
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  ks.erase(std::remove(ks.begin(), ks.end(), size_t(0)), ks.end());
  return ks;
}

std::vector<const lk::TopkIsaKernels*> supportedIsas() {
  std::vector<const lk::TopkIsaKernels*> out;
  for (int level = 0; level <= 2; ++level) {
    if (const auto* isa = lk::topkKernelsAt(lk::SimdLevel(level))) out.push_back(isa);
  }
  return out;
}

const DataType kTypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};

void testTopkK(Tally& t) {
  struct Case { size_t count; double density; size_t want; };
  const Case cases[] = {{0, 0.5, 0},       {10, 0.0, 1},        {10, -1.0, 1},
                        {10, NAN, 1},      {10, 2.0, 10},       {100, 0.07, 7},
                        {100, 0.01, 1},    {3, 0.5, 2},         {1000, 0.0011, 2},
                        {25600000, 0.01, 256000}, {25600000, 0.001, 25600}, {7, 1.0, 7}};
  for (const Case& c : cases) {
    size_t got = lk::topkK(c.count, c.density);
    t.check(got == c.want, "topkK(" + std::to_string(c.count) + ", " + std::to_string(c.density) +
                               ") = " + std::to_string(got) + ", want " + std::to_string(c.want));
  }
}

// Small and medium sizes: every instruction set, path, dtype, distribution and k.
void testSelectionMatrix(Tally& t) {
  const size_t sizes[] = {1, 2, 7, 31, 32, 33, 100, 1000, 4097, 32768, 100003};
  auto isas = supportedIsas();
  lk::TopkScratch scratch;  // shared on purpose: reuse across sizes must not leak state
  Rng rng{0x243f6a8885a308d3ull};
  for (size_t n : sizes) {
    for (Dist d : kDists) {
      std::vector<float> f = makeFloats(d, n, rng);
      for (DataType dt : kTypes) {
        Input in = encode(f, dt);
        for (size_t k : ksFor(n)) {
          std::vector<uint32_t> want = referenceTopk(in.values, k);
          std::string label = std::string(distName(d)) + " " + lightcc::dtypeName(dt) + " n=" +
                              std::to_string(n) + " k=" + std::to_string(k);
          for (const auto* isa : isas) {
            for (TopkPath path : {TopkPath::kAuto, TopkPath::kSampled, TopkPath::kExact}) {
              checkSelection(t, label, in, k, want, *isa, path, n * 31 + k, scratch);
            }
          }
        }
      }
    }
  }
}

// A period-100 pattern that misleads a stride-100 sample: the big entries sit on one residue.
// Seeds whose sample hits that residue see only big values and must lower the threshold; the
// others see only small ones, keep far too many and must fall back. Both must stay exact.
void testMisleadingSamples(Tally& t) {
  const size_t n = 1000000;
  Rng rng{7};
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) {
    if (i % 100 == 37) f[i] = float(1.0 + 0.01 * rng.unit());
    else if (rng.next() % 1000 < 6) f[i] = float(0.85 + 0.1 * rng.unit());
    else f[i] = float(0.5 * rng.unit());
  }
  Input in = encode(f, DataType::kFloat32);
  size_t k = lk::topkK(n, 0.015);
  std::vector<uint32_t> want = referenceTopk(in.values, k);
  lk::TopkScratch scratch;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    checkSelection(t, "misleading-sample", in, k, want, lk::topkKernels(), TopkPath::kAuto, seed,
                   scratch);
  }
}

// Full size (a 25.6 M-parameter layer), dispatched path only; and determinism across seeds.
void testLarge(Tally& t) {
  const size_t n = 25600000;
  Rng rng{99};
  lk::TopkScratch scratch;
  for (Dist d : {Dist::kNormal, Dist::kCauchy, Dist::kMostlyZero}) {
    Input in = encode(makeFloats(d, n, rng), DataType::kFloat32);
    for (double density : {0.01, 0.001}) {
      size_t k = lk::topkK(n, density);
      std::vector<uint32_t> want = referenceTopk(in.values, k);
      std::string label = std::string(distName(d)) + " float32 n=25.6M k=" + std::to_string(k);
      for (uint64_t seed : {1, 2}) {
        checkSelection(t, label, in, k, want, lk::topkKernels(), TopkPath::kAuto, seed, scratch);
      }
    }
  }
  Input half = encode(makeFloats(Dist::kNormal, n, rng), DataType::kFloat16);
  size_t k = lk::topkK(n, 0.01);
  checkSelection(t, "normal float16 n=25.6M", half, k, referenceTopk(half.values, k),
                 lk::topkKernels(), TopkPath::kAuto, 3, scratch);
}

void testSelectTopkApi(Tally& t) {
  Rng rng{5};
  std::vector<float> f = makeFloats(Dist::kNormal, 50000, rng);
  size_t k = 500;
  std::vector<uint32_t> idx(k), idx2(k);
  std::vector<float> vals(k), vals2(k);
  lk::TopkScratch scratch;
  lk::selectTopk(f.data(), f.size(), k, 11, idx.data(), vals.data(), scratch);
  t.check(idx == referenceTopk(f, k), "selectTopk: differs from the reference");
  lightcc::Status st = lk::selectTopkAny(f.data(), DataType::kFloat32, f.size(), k, 12,
                                         idx2.data(), vals2.data(), scratch);
  t.check(st.ok() && idx2 == idx && std::memcmp(vals.data(), vals2.data(), k * 4) == 0,
          "selectTopkAny(float32, other seed) differs from selectTopk");
  st = lk::selectTopkAny(f.data(), DataType::kFloat64, f.size(), k, 1, idx2.data(), vals2.data(),
                         scratch);
  t.check(st.code() == lightcc::StatusCode::kInvalidArgument, "selectTopkAny accepted float64");
}

// ---- scatter-add, residual, momentum ----

void testScatterAdd(Tally& t) {
  const size_t n = 300000, k = 30000;  // several of scatterAddRanks' 64 Ki-element windows
  const int ranks = 5;
  Rng rng{3};
  // Magnitudes spanning 1e8..1e-3 make float addition visibly order-dependent.
  std::vector<std::vector<uint32_t>> idx(ranks);
  std::vector<std::vector<float>> val(ranks);
  for (int r = 0; r < ranks; ++r) {
    std::vector<uint32_t> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = uint32_t(i);
    for (size_t i = 0; i < k; ++i) std::swap(all[i], all[i + rng.next() % (n - i)]);
    idx[r].assign(all.begin(), all.begin() + k);
    std::sort(idx[r].begin(), idx[r].end());
    for (size_t i = 0; i < k; ++i) {
      val[r].push_back(float((rng.normal()) * std::pow(10.0, double(rng.next() % 12) - 3)));
    }
  }
  std::vector<float> base(n);
  for (float& x : base) x = float(rng.normal());
  std::vector<float> want = base, reversed = base;
  for (int r = 0; r < ranks; ++r) {
    for (size_t i = 0; i < k; ++i) want[idx[r][i]] = want[idx[r][i]] + val[r][i];
  }
  for (int r = ranks - 1; r >= 0; --r) {
    for (size_t i = 0; i < k; ++i) reversed[idx[r][i]] = reversed[idx[r][i]] + val[r][i];
  }
  t.check(std::memcmp(want.data(), reversed.data(), n * 4) != 0,
          "scatter-add test data is not order-sensitive (the bit-identity check would be empty)");
  // Every "rank" runs it on its own copy of the gathered pairs: same bits everywhere.
  for (int who = 0; who < 3; ++who) {
    auto idxCopy = idx;
    auto valCopy = val;
    std::vector<const uint32_t*> ip;
    std::vector<const float*> vp;
    for (int r = 0; r < ranks; ++r) {
      ip.push_back(idxCopy[r].data());
      vp.push_back(valCopy[r].data());
    }
    std::vector<float> dst = base;
    lightcc::Status st = lk::scatterAddRanks(dst.data(), n, ip.data(), vp.data(), ranks, k);
    t.check(st.ok() && std::memcmp(dst.data(), want.data(), n * 4) == 0,
            "scatterAddRanks differs from rank-order reference (copy " + std::to_string(who) + ")");
  }
  std::vector<float> one = base, oneWant = base;
  for (size_t i = 0; i < k; ++i) oneWant[idx[0][i]] += val[0][i];
  t.check(lk::scatterAdd(one.data(), n, idx[0].data(), val[0].data(), k).ok() &&
              std::memcmp(one.data(), oneWant.data(), n * 4) == 0,
          "scatterAdd differs from reference");
  // 16-bit values: converted exactly, accumulated in float.
  for (DataType dt : {DataType::kFloat16, DataType::kBFloat16}) {
    std::vector<std::vector<uint8_t>> enc(ranks);
    std::vector<const void*> vp;
    std::vector<const uint32_t*> ip;
    std::vector<float> ref = base;
    for (int r = 0; r < ranks; ++r) {
      Input in = encode(val[r], dt);
      enc[r] = in.bytes;
      vp.push_back(enc[r].data()), ip.push_back(idx[r].data());
      for (size_t i = 0; i < k; ++i) ref[idx[r][i]] = ref[idx[r][i]] + in.values[i];
    }
    std::vector<float> dst = base;
    lightcc::Status st = lk::scatterAddRanksAny(dst.data(), n, ip.data(), vp.data(), dt, ranks, k);
    t.check(st.ok() && std::memcmp(dst.data(), ref.data(), n * 4) == 0,
            std::string("scatterAddRanksAny ") + lightcc::dtypeName(dt) + " differs");
  }
  // Indices out of order, with repeats: added in the given order, rank after rank.
  {
    std::vector<uint32_t> mixed = idx[1];
    std::reverse(mixed.begin(), mixed.end());
    mixed[5] = mixed[9];
    std::vector<const uint32_t*> ip = {idx[0].data(), mixed.data()};
    std::vector<const float*> vp = {val[0].data(), val[1].data()};
    std::vector<float> ref = base, dst = base;
    for (size_t i = 0; i < k; ++i) ref[idx[0][i]] = ref[idx[0][i]] + val[0][i];
    for (size_t i = 0; i < k; ++i) ref[mixed[i]] = ref[mixed[i]] + val[1][i];
    lightcc::Status st = lk::scatterAddRanks(dst.data(), n, ip.data(), vp.data(), 2, k);
    t.check(st.ok() && std::memcmp(dst.data(), ref.data(), n * 4) == 0,
            "scatterAddRanks with descending and repeated indices differs from reference");
  }
  // A peer's out-of-range index is an error, and dst stays as it was.
  std::vector<uint32_t> bad = idx[2];
  bad[k / 2] = uint32_t(n);
  std::vector<const uint32_t*> ip = {idx[0].data(), idx[1].data(), bad.data()};
  std::vector<const float*> vp = {val[0].data(), val[1].data(), val[2].data()};
  std::vector<float> dst = base;
  lightcc::Status st = lk::scatterAddRanks(dst.data(), n, ip.data(), vp.data(), 3, k);
  t.check(st.code() == lightcc::StatusCode::kPeerFailure &&
              st.message().find("rank 2") != std::string::npos &&
              std::memcmp(dst.data(), base.data(), n * 4) == 0,
          "out-of-range index: want kPeerFailure naming rank 2 and dst untouched, got '" +
              st.message() + "'");
}

void testResidualAndMomentum(Tally& t) {
  Rng rng{17};
  const size_t lengths[] = {0, 1, 7, 8, 31, 33, 1000003};
  for (const auto* isa : supportedIsas()) {
    for (size_t n : lengths) {
      std::vector<float> r(n), u(n), v(n), g(n);
      for (size_t i = 0; i < n; ++i) {
        r[i] = float(rng.normal()), u[i] = float(rng.normal()), v[i] = float(rng.normal());
        g[i] = float(rng.normal() * std::pow(2.0, double(rng.next() % 40) - 20));
      }
      for (DataType dt : kTypes) {
        Input gin = encode(g, dt);
        std::string what = std::string(isa->name) + " " + lightcc::dtypeName(dt) + " n=" +
                           std::to_string(n);
        const float scale = 0.37f, m = 0.9f;
        std::vector<float> rGot = r, rWant = r;
        isa->residual(rGot.data(), gin.bytes.data(), dt, n, scale);
        for (size_t i = 0; i < n; ++i) {
          float p = scale * gin.values[i];
          rWant[i] = rWant[i] + p;
        }
        t.check(std::memcmp(rGot.data(), rWant.data(), n * 4) == 0, "residual " + what);
        std::vector<float> uGot = u, vGot = v, uWant = u, vWant = v;
        isa->momentum(uGot.data(), vGot.data(), gin.bytes.data(), dt, n, m);
        for (size_t i = 0; i < n; ++i) {
          float p = m * uWant[i];
          uWant[i] = p + gin.values[i];
          vWant[i] = vWant[i] + uWant[i];
        }
        t.check(std::memcmp(uGot.data(), uWant.data(), n * 4) == 0 &&
                    std::memcmp(vGot.data(), vWant.data(), n * 4) == 0,
                "momentum " + what);
      }
    }
  }
  // Public entry points and masking.
  std::vector<float> r = {1, 2, 3, 4, 5}, g = {1, 1, 1, 1, 1};
  lk::accumulateResidual(r.data(), g.data(), 5, 2.0f);
  const uint32_t sent[] = {1, 3};
  lk::clearSelected(r.data(), sent, 2);
  t.check(r == std::vector<float>({3, 0, 5, 0, 7}), "accumulateResidual + clearSelected");
  std::vector<float> u = {1, 1}, v = {0, 10}, gg = {0.5f, -1};
  lk::momentumCorrect(u.data(), v.data(), gg.data(), 2, 0.5f);
  t.check(u == std::vector<float>({1.0f, -0.5f}) && v == std::vector<float>({1.0f, 9.5f}),
          "momentumCorrect");
  t.check(lk::accumulateResidualAny(r.data(), g.data(), DataType::kInt32, 5, 1.0f).code() ==
              lightcc::StatusCode::kInvalidArgument,
          "accumulateResidualAny accepted int32");
}

// A selected value leaving in a 16-bit wire dtype: the wire value plus what the residual keeps
// is the value again, exactly, for every finite value the dtype can hold; what overflows to inf,
// and inf or NaN themselves, leave whole (remainder 0), as an exact selection clears them.
void testWireRounding(Tally& t) {
  Rng rng{99};
  int exact16 = 0, exactBf = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const float v = static_cast<float>(static_cast<int64_t>(rng.next() % 2000001) - 1000000) * 1e-3f *
                    std::ldexp(1.0f, static_cast<int>(rng.next() % 20) - 10);
    lk::Half h;
    lk::BFloat16 b;
    float f;
    lk::storeWire(v, &h);
    lk::storeWire(v, &b);
    lk::storeWire(v, &f);
    exact16 += std::fabs(v) > 65504.0f || lk::toFloat(h) + lk::wireRemainder(v, lk::toFloat(h)) == v;
    exactBf += lk::toFloat(b) + lk::wireRemainder(v, lk::toFloat(b)) == v;
    t.check(f == v && lk::wireRemainder(v, f) == 0.0f, "float32 wire value is the value itself");
  }
  t.check(exact16 == n, "float16 wire value + remainder == value (" + std::to_string(exact16) + " of " +
                            std::to_string(n) + ")");
  t.check(exactBf == n, "bfloat16 wire value + remainder == value");
  const float inf = std::numeric_limits<float>::infinity();
  lk::Half h;
  lk::storeWire(70000.0f, &h);
  t.check(std::isinf(lk::toFloat(h)) && lk::wireRemainder(70000.0f, lk::toFloat(h)) == 0.0f,
          "overflow to inf leaves whole");
  t.check(lk::wireRemainder(inf, inf) == 0.0f && lk::wireRemainder(std::nanf(""), std::nanf("")) == 0.0f,
          "inf and NaN leave whole");
}

}  // namespace

int main() {
  Tally t;
  testWireRounding(t);
  testTopkK(t);
  testSelectTopkApi(t);
  testScatterAdd(t);
  testResidualAndMomentum(t);
  testSelectionMatrix(t);
  testMisleadingSamples(t);
  testLarge(t);
  // The runs above must have reached every way selectTopk can finish, or they proved less.
  for (TopkOutcome o : {TopkOutcome::kAll, TopkOutcome::kExact, TopkOutcome::kSurvivors,
                        TopkOutcome::kTiePadding, TopkOutcome::kFallback}) {
    t.check(gOutcomes[o] > 0, "no run finished with outcome " + std::to_string(int(o)));
  }
  t.check(gLoweredSurvivors > 0, "no sampled run needed (and survived) a lowered threshold");
  std::printf("outcomes: all %d, exact %d, survivors %d (after lowering %d), tie padding %d, "
              "fallback %d\n",
              gOutcomes[TopkOutcome::kAll], gOutcomes[TopkOutcome::kExact],
              gOutcomes[TopkOutcome::kSurvivors], gLoweredSurvivors,
              gOutcomes[TopkOutcome::kTiePadding], gOutcomes[TopkOutcome::kFallback]);
  std::printf("%d passed, %d failed\n", t.passed, t.failed);
  return t.failed == 0 ? 0 : 1;
}
