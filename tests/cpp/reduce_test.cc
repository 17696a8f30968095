// Checks the CPU reduction kernels and half conversions against independent scalar references.
//
// Build and run from the repository root (an indented line continues the command above it):
//   F="-std=c++17 -O2 -ffp-contract=off -Icsrc"
//   g++ $F -mavx2 -mf16c -c csrc/kernels/reduce_avx2.cc -o /tmp/lk_avx2.o
//   g++ $F -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mf16c -mprefer-vector-width=256
//       -c csrc/kernels/reduce_avx512.cc -o /tmp/lk_avx512.o
//   g++ $F csrc/kernels/{reduce_generic,reduce_scaled_int,integer_average,dispatch}.cc
//       csrc/common/dtype.cc
//       tests/cpp/reduce_test.cc /tmp/lk_avx2.o /tmp/lk_avx512.o -o /tmp/reduce_test
//   /tmp/reduce_test            (exit 0 when everything passed; 10-30 s on 2 cores)
// On a non-x86 machine leave out the two .o files (dispatch.cc then offers only "generic").
//
// Every instruction set this CPU supports is checked through reduceNAt, and the dispatched
// reduceN once more. Outputs must match the reference bit for bit; a NaN only has to be a NaN.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "common/dtype.h"
#include "engine/op_traits.h"
#include "kernels/half.h"
#include "kernels/reduce.h"
#include "kernels/reduce_ops.h"
#include "kernels/simd_dispatch.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace lk = lightcc::kernels;
using lightcc::DataType;
using lightcc::ReduceOp;


// The reference: plain scalar code restating the contract in reduce.h, plus conversion oracles
// that do not share code with half.h (ldexp, nearest-by-distance in double, F16C hardware).
namespace ref {

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  double unit() { return double(next() >> 11) * 0x1p-53; }
};

double halfValue(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  int m = h & 0x3ff;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return m ? std::copysign(NAN, sign) : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Nearest half by distance, ties to the even pattern. NaN: quiet, top payload bits kept.
uint16_t nearestHalf(float x) {
  uint32_t bits = bitsOf(x);
  uint16_t sign = (bits >> 31) ? 0x8000 : 0;
  if (std::isnan(x)) return uint16_t(sign | 0x7e00 | ((bits >> 13) & 0x3ff));
  double a = std::fabs(double(x));
  if (a >= 65520.0) return sign | 0x7c00;
  unsigned lo = 0, hi = 0x7bff;
  while (lo < hi) {
    unsigned mid = (lo + hi + 1) / 2;
    if (halfValue(uint16_t(mid)) <= a) lo = mid; else hi = mid - 1;
  }
  double below = a - halfValue(uint16_t(lo));
  double above = (lo == 0x7bff ? 65536.0 : halfValue(uint16_t(lo + 1))) - a;
  unsigned pick = below < above ? lo : above < below ? lo + 1 : (lo & 1) ? lo + 1 : lo;
  return uint16_t(sign | pick);
}

uint16_t nearestBf16(float x) {
  uint32_t bits = bitsOf(x);
  uint32_t sign = bits & 0x80000000u;
  uint32_t a = bits & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
  if (a == 0x7f800000u) return uint16_t(bits >> 16);
  uint32_t lo = a >> 16;
  double v = double(floatOf(a));
  double below = v - double(floatOf(lo << 16));
  double above = (lo + 1 == 0x7f80 ? std::ldexp(1.0, 128) : double(floatOf((lo + 1) << 16))) - v;
  uint32_t pick = below < above ? lo : above < below ? lo + 1 : (lo & 1) ? lo + 1 : lo;
  return uint16_t((sign >> 16) | pick);
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t hwFloatToHalf(float x) { return _cvtss_sh(x, 0); }
__attribute__((target("f16c"))) float hwHalfToFloat(uint16_t h) { return _cvtsh_ss(h); }
bool haveF16c() { return __builtin_cpu_supports("f16c"); }
#else
uint16_t hwFloatToHalf(float) { return 0; }
float hwHalfToFloat(uint16_t) { return 0; }
bool haveF16c() { return false; }
#endif

template <class Check>
void testHalfConversions(Check check, Rng& rng) {
  // halfToFloat: all 65536 patterns, exact bits (NaN: quiet with payload, as F16C).
  std::string bad;
  for (uint32_t h = 0; h < 65536; ++h) {
    float got = lk::halfToFloat(uint16_t(h));
    double want = halfValue(uint16_t(h));
    bool ok = std::isnan(want)
                  ? bitsOf(got) == (((h & 0x8000u) << 16) | 0x7fc00000u | ((h & 0x3ffu) << 13))
                  : bitsOf(got) == bitsOf(float(want));
    if (haveF16c()) ok &= bitsOf(got) == bitsOf(hwHalfToFloat(uint16_t(h)));
    if (!ok && bad.empty()) bad = "halfToFloat(" + std::to_string(h) + ")";
  }
  check(bad.empty(), "halfToFloat all patterns " + bad);

  // floatToHalf: every half, every midpoint and its float neighbours, specials, random patterns.
  std::vector<float> in = {0.0f, -0.0f, INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, FLT_MIN,
                           0x1p-149f, 65504.0f, 65519.996f, 65520.0f, 65536.0f, 0x1p-24f,
                           0x1p-25f, std::nextafter(0x1p-25f, 1.0f), 3 * 0x1p-26f, 1e-8f,
                           floatOf(0x7fc00000u), floatOf(0x7f800001u), floatOf(0xffffffffu),
                           floatOf(0x7fa5a5a5u)};
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    double v = halfValue(uint16_t(h));
    double next = h == 0x7bff ? 65536.0 : halfValue(uint16_t(h + 1));
    float mid = float((v + next) / 2);  // exact: 12 significant bits
    for (float f : {float(v), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      in.push_back(f);
      in.push_back(-f);
    }
  }
  for (int i = 0; i < 1000000; ++i) in.push_back(floatOf(uint32_t(rng.next())));
  bad.clear();
  for (float f : in) {
    uint16_t got = lk::floatToHalf(f);
    bool ok = got == nearestHalf(f) && (!haveF16c() || got == hwFloatToHalf(f));
    if (!ok && bad.empty()) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "floatToHalf(%a = 0x%08x) = 0x%04x, want 0x%04x (hw 0x%04x)",
                    double(f), bitsOf(f), got, nearestHalf(f), hwFloatToHalf(f));
      bad = buf;
    }
  }
  check(bad.empty(), "floatToHalf over " + std::to_string(in.size()) + " inputs " + bad);

  // bfloat16: ties both ways, overflow, NaN payloads, random patterns; and every pattern back.
  in = {FLT_MAX, -FLT_MAX, INFINITY, -INFINITY, 0.0f, -0.0f, floatOf(0x7f800001u),
        floatOf(0xff800001u), floatOf(0x3f808000u), floatOf(0x3f818000u), floatOf(0x3f808001u),
        floatOf(0x00008000u), floatOf(0x7f7f8000u)};
  for (int i = 0; i < 1000000; ++i) in.push_back(floatOf(uint32_t(rng.next())));
  bad.clear();
  for (float f : in) {
    if (lk::floatToBf16(f) != nearestBf16(f) && bad.empty()) bad = std::to_string(bitsOf(f));
  }
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = lk::bf16ToFloat(uint16_t(b));
    bool ok = bitsOf(f) == b << 16 && (std::isnan(f) || lk::floatToBf16(f) == b);
    if (!ok && bad.empty()) bad = "pattern " + std::to_string(b);
  }
  check(bad.empty(), "bfloat16 conversions " + bad);
}

bool isFloat(DataType t) { return lightcc::isFloatType(t); }

double loadFloat(DataType t, const void* p, size_t i) {
  switch (t) {
    case DataType::kFloat16: return lk::halfToFloat(static_cast<const uint16_t*>(p)[i]);
    case DataType::kBFloat16: return lk::bf16ToFloat(static_cast<const uint16_t*>(p)[i]);
    case DataType::kFloat32: return static_cast<const float*>(p)[i];
    default: return static_cast<const double*>(p)[i];
  }
}

void storeFloat(DataType t, void* p, size_t i, double v) {
  switch (t) {
    case DataType::kFloat16: static_cast<uint16_t*>(p)[i] = lk::floatToHalf(float(v)); break;
    case DataType::kBFloat16: static_cast<uint16_t*>(p)[i] = lk::floatToBf16(float(v)); break;
    case DataType::kFloat32: static_cast<float*>(p)[i] = float(v); break;
    default: static_cast<double*>(p)[i] = v; break;
  }
}

// Floats: mostly moderate values, a fifth raw bit patterns (subnormals, huge, NaN, inf), and
// hand-picked specials. Integers: raw bits. bool: 0 or 1.
void fillRandom(DataType t, unsigned char* p, size_t count, Rng& rng) {
  static const double kSpecials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 65504.0,
                                     1e-7, -3e-8, 0x1p-126, 0x1p-149, 3.0e38, 1e300};
  size_t size = lightcc::dtypeSize(t);
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = rng.next();
    if (!isFloat(t)) {
      std::memcpy(p + i * size, &bits, size);
      if (t == DataType::kBool) p[i] &= 1;
      continue;
    }
    double r = rng.unit();
    if (r < 0.7) {
      storeFloat(t, p, i, (rng.unit() - 0.5) * 8.0);
    } else if (r < 0.9) {
      std::memcpy(p + i * size, &bits, size);
    } else {
      storeFloat(t, p, i, kSpecials[bits % (sizeof kSpecials / sizeof kSpecials[0])]);
    }
  }
}

template <class A>
A combine(A a, A b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
      return a < b ? a : b;  // equal: the later operand
    case ReduceOp::kMax:
      if (std::isnan(a)) return a;
      if (std::isnan(b)) return b;
      return a > b ? a : b;
    case ReduceOp::kProduct: return a * b;
    default: return a + b;
  }
}

// Float types: accumulate in A (float, or double for float64), source order, round once.
template <class A>
void reduceFloat(DataType t, const std::vector<const void*>& srcs, size_t count, ReduceOp op,
                 double pre, double post, void* out) {
  for (size_t i = 0; i < count; ++i) {
    A acc = 0;
    for (size_t j = 0; j < srcs.size(); ++j) {
      A x = A(loadFloat(t, srcs[j], i));
      if (pre != 1.0) x = x * A(pre);
      acc = j == 0 ? x : combine(acc, x, op);
    }
    if (post != 1.0) acc = acc * A(post);
    storeFloat(t, out, i, acc);
  }
}

// double -> T: truncate toward zero, saturate, NaN -> 0.
template <class T>
T saturate(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  double hiPlusOne = std::ldexp(1.0, std::numeric_limits<T>::digits);  // exact, unlike max()
  if (t <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (t >= hiPlusOne) return std::numeric_limits<T>::max();
  return T(t);
}

// Integers: every source scaled and truncated, combined with wrap-around, total scaled again.
template <class T>
void reduceInt(const std::vector<const void*>& srcs, size_t count, ReduceOp op, double pre,
               double post, void* out) {
  using U = std::make_unsigned_t<T>;
  for (size_t i = 0; i < count; ++i) {
    T acc = 0;
    for (size_t j = 0; j < srcs.size(); ++j) {
      T x = static_cast<const T*>(srcs[j])[i];
      if (pre != 1.0) x = saturate<T>(double(x) * pre);
      if (j == 0) acc = x;
      else if (op == ReduceOp::kMin) acc = x < acc ? x : acc;
      else if (op == ReduceOp::kMax) acc = x > acc ? x : acc;
      else if (op == ReduceOp::kProduct) acc = T(uint64_t(U(acc)) * uint64_t(U(x)));
      else if (op == ReduceOp::kBand) acc = T(U(acc) & U(x));
      else if (op == ReduceOp::kBor) acc = T(U(acc) | U(x));
      else if (op == ReduceOp::kBxor) acc = T(U(acc) ^ U(x));
      else acc = T(uint64_t(U(acc)) + uint64_t(U(x)));
    }
    if (post != 1.0) acc = saturate<T>(double(acc) * post);
    static_cast<T*>(out)[i] = acc;
  }
}

std::vector<unsigned char> reduce(DataType t, const std::vector<const void*>& srcs, size_t count,
                                  ReduceOp op, double pre, double post) {
  std::vector<unsigned char> out(count * lightcc::dtypeSize(t));
  if (op == ReduceOp::kAverage) op = ReduceOp::kSum;
  switch (t) {
    case DataType::kFloat64: reduceFloat<double>(t, srcs, count, op, pre, post, out.data()); break;
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kBFloat16: reduceFloat<float>(t, srcs, count, op, pre, post, out.data()); break;
    case DataType::kInt8: reduceInt<int8_t>(srcs, count, op, pre, post, out.data()); break;
    case DataType::kInt16: reduceInt<int16_t>(srcs, count, op, pre, post, out.data()); break;
    case DataType::kUInt16: reduceInt<uint16_t>(srcs, count, op, pre, post, out.data()); break;
    case DataType::kInt32: reduceInt<int32_t>(srcs, count, op, pre, post, out.data()); break;
    case DataType::kInt64: reduceInt<int64_t>(srcs, count, op, pre, post, out.data()); break;
    default: reduceInt<uint8_t>(srcs, count, op, pre, post, out.data()); break;
  }
  return out;
}

// Index of the first differing element (count if none); two NaNs count as equal.
size_t firstMismatch(DataType t, const void* got, const void* want, size_t count) {
  size_t size = lightcc::dtypeSize(t);
  for (size_t i = 0; i < count; ++i) {
    const unsigned char* g = static_cast<const unsigned char*>(got) + i * size;
    const unsigned char* w = static_cast<const unsigned char*>(want) + i * size;
    if (std::memcmp(g, w, size) == 0) continue;
    if (isFloat(t) && std::isnan(loadFloat(t, got, i)) && std::isnan(loadFloat(t, want, i))) {
      continue;
    }
    return i;
  }
  return count;
}

std::string show(DataType t, const void* got, const void* want, size_t i) {
  size_t size = lightcc::dtypeSize(t);
  uint64_t g = 0, w = 0;
  std::memcpy(&g, static_cast<const unsigned char*>(got) + i * size, size);
  std::memcpy(&w, static_cast<const unsigned char*>(want) + i * size, size);
  char buf[96];
  std::snprintf(buf, sizeof buf, "got 0x%llx want 0x%llx", static_cast<unsigned long long>(g),
                static_cast<unsigned long long>(w));
  return buf;
}

}  // namespace ref

namespace {

const DataType kTypes[] = {DataType::kUInt8,    DataType::kInt8,    DataType::kInt32,
                           DataType::kInt64,    DataType::kFloat16, DataType::kBFloat16,
                           DataType::kFloat32,  DataType::kFloat64, DataType::kBool,
                           DataType::kInt16,    DataType::kUInt16};
const ReduceOp kOps[] = {ReduceOp::kAverage, ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax,
                         ReduceOp::kProduct, ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};

// The ops defined on dtype t: the bitwise ones only on integers and bool.
bool opApplies(DataType t, ReduceOp op) { return !(lightcc::isBitwiseOp(op) && isFloatType(t)); }
const size_t kLengths[] = {0, 1, 7, 33, 1000003};
const int kNs[] = {1, 2, 3, 4, 5, 8};
constexpr size_t kGuard = 16;  // bytes after dst that must stay untouched
constexpr unsigned char kGuardByte = 0xa5;

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

// One way of running a reduction: a forced SIMD level, or the dispatcher (level < 0).
struct Runner {
  int level;
  std::string name;
  void operator()(void* dst, const void* const* srcs, int n, size_t count, DataType t, ReduceOp op,
                  double pre, double post) const {
    if (level < 0) return lk::reduceN(dst, srcs, n, count, t, op, pre, post);
    lk::reduceNAt(lk::SimdLevel(level), dst, srcs, n, count, t, op, pre, post);
  }
};

std::vector<Runner> runners() {
  std::vector<Runner> out;
  for (lk::SimdLevel l : {lk::SimdLevel::kGeneric, lk::SimdLevel::kAvx2, lk::SimdLevel::kAvx512}) {
    if (lk::simdLevelSupported(l)) out.push_back({int(l), lk::simdLevelName(l)});
  }
  out.push_back({-1, std::string("dispatched:") + lk::simdLevel()});
  return out;
}

std::string describe(const Runner& r, DataType t, ReduceOp op, int n, size_t count, double pre,
                     double post, const std::string& extra = "") {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s %s %s n=%d count=%zu pre=%g post=%g%s", r.name.c_str(),
                lightcc::dtypeName(t), lightcc::reduceOpName(op), n, count, pre, post,
                extra.c_str());
  return buf;
}

// Sources live at element offsets j % 2 and dst at offset 1, so loads and stores run misaligned.
struct Case {
  DataType type;
  size_t count;
  size_t size;
  std::vector<std::vector<unsigned char>> srcStore;
  std::vector<const void*> srcs;

  Case(DataType t, int n, size_t count, ref::Rng& rng)
      : type(t), count(count), size(lightcc::dtypeSize(t)) {
    srcStore.resize(n);
    for (int j = 0; j < n; ++j) {
      srcStore[j].resize((count + 1) * size);
      ref::fillRandom(t, srcStore[j].data() + (j % 2) * size, count, rng);
      srcs.push_back(srcStore[j].data() + (j % 2) * size);
    }
  }
};

// Runs `run` into a guarded, misaligned dst and compares with `want`.
void runAndCompare(Tally& tally, const Runner& r, const Case& c, int n, ReduceOp op, double pre,
                   double post, const std::vector<unsigned char>& want) {
  std::vector<unsigned char> dstStore(c.size + c.count * c.size + kGuard, kGuardByte);
  unsigned char* dst = dstStore.data() + c.size;
  r(dst, c.srcs.data(), n, c.count, c.type, op, pre, post);
  size_t bad = ref::firstMismatch(c.type, dst, want.data(), c.count);
  bool guardOk = true;
  for (size_t b = 0; b < kGuard; ++b) guardOk &= dst[c.count * c.size + b] == kGuardByte;
  guardOk &= dstStore[0] == kGuardByte;
  std::string what = describe(r, c.type, op, n, c.count, pre, post);
  if (bad != c.count) {
    what += " first mismatch at " + std::to_string(bad) + ": " +
            ref::show(c.type, dst, want.data(), bad);
  }
  if (!guardOk) what += " wrote outside dst";
  tally.check(bad == c.count && guardOk, what);
}

void testMatrix(Tally& tally, const std::vector<Runner>& rs, ref::Rng& rng) {
  for (DataType t : kTypes) {
    for (int n : kNs) {
      for (size_t count : kLengths) {
        Case c(t, n, count, rng);
        for (ReduceOp op : kOps) {
          if (!opApplies(t, op)) continue;
          std::vector<unsigned char> want = ref::reduce(t, c.srcs, count, op, 1.0, 1.0);
          for (const Runner& r : rs) runAndCompare(tally, r, c, n, op, 1.0, 1.0, want);
          if (n == 1 && op != ReduceOp::kAverage) break;  // n == 1 ignores the op: one is enough
        }
      }
    }
  }
}

void testScaled(Tally& tally, const std::vector<Runner>& rs, ref::Rng& rng) {
  const double kScales[][2] = {{0.5, 3.0}, {0.25, 1.0}, {1.0, 1.0 / 3.0}, {-1.5, 1e300}};
  for (DataType t : kTypes) {
    for (int n : {1, 2, 5}) {
      for (size_t count : {size_t(33), size_t(100003)}) {
        Case c(t, n, count, rng);
        for (ReduceOp op : {ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kProduct, ReduceOp::kBxor}) {
          if (!opApplies(t, op)) continue;
          for (const auto& s : kScales) {
            std::vector<unsigned char> want = ref::reduce(t, c.srcs, count, op, s[0], s[1]);
            for (const Runner& r : rs) runAndCompare(tally, r, c, n, op, s[0], s[1], want);
          }
        }
      }
    }
  }
}

// dst == srcs[k]: the result must equal the out-of-place one.
void testAliasing(Tally& tally, const std::vector<Runner>& rs, ref::Rng& rng) {
  for (DataType t : kTypes) {
    for (int n : {2, 3, 4, 5, 8}) {
      for (size_t count : {size_t(33), size_t(100003)}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kBand}) {
          if (!opApplies(t, op)) continue;
          for (int k : {0, n - 1}) {
            Case c(t, n, count, rng);
            double post = isFloatType(t) ? 0.5 : 1.0;
            std::vector<unsigned char> want = ref::reduce(t, c.srcs, count, op, 1.0, post);
            for (const Runner& r : rs) {
              const unsigned char* src = static_cast<const unsigned char*>(c.srcs[k]);
              std::vector<unsigned char> inout(src, src + count * c.size);
              std::vector<const void*> srcs = c.srcs;
              srcs[k] = inout.data();
              r(inout.data(), srcs.data(), n, count, t, op, 1.0, post);
              size_t bad = ref::firstMismatch(t, inout.data(), want.data(), count);
              tally.check(bad == count, describe(r, t, op, n, count, 1.0, post,
                                                 " dst==srcs[" + std::to_string(k) + "]"));
            }
          }
        }
      }
    }
  }
}

// Min/Max propagate NaN from either side, for every float type and level.
void testNanPropagation(Tally& tally, const std::vector<Runner>& rs) {
  const float a[] = {NAN, 1.0f, NAN, 2.0f, -0.0f};
  const float b[] = {1.0f, NAN, NAN, 3.0f, 0.0f};
  constexpr size_t kCount = 5;
  for (DataType t :
       {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    std::vector<unsigned char> x(kCount * 8), y(kCount * 8), out(kCount * 8);
    for (size_t i = 0; i < kCount; ++i) {
      ref::storeFloat(t, x.data(), i, a[i]);
      ref::storeFloat(t, y.data(), i, b[i]);
    }
    const void* srcs[] = {x.data(), y.data()};
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
      for (const Runner& r : rs) {
        r(out.data(), srcs, 2, kCount, t, op, 1.0, 1.0);
        double v3 = ref::loadFloat(t, out.data(), 3);
        bool ok = std::isnan(ref::loadFloat(t, out.data(), 0)) &&
                  std::isnan(ref::loadFloat(t, out.data(), 1)) &&
                  std::isnan(ref::loadFloat(t, out.data(), 2)) &&
                  v3 == (op == ReduceOp::kMin ? 2.0 : 3.0) &&
                  !std::signbit(ref::loadFloat(t, out.data(), 4));  // equal: the later (+0) wins
        tally.check(ok, describe(r, t, op, 2, kCount, 1, 1, " NaN propagation"));
      }
    }
  }
}

// A NaN whose low mantissa bits are all set (here from a crafted NaN prescale) must not be
// rounded into an infinity or -0 by the float16/bfloat16 store.
void testNanPayloadRounding(Tally& tally, const std::vector<Runner>& rs) {
  uint64_t bits = 0x7fffffffe0000000ull;  // converts to float 0x7fffffff
  double pre;
  std::memcpy(&pre, &bits, sizeof pre);
  constexpr size_t kCount = 37;
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32}) {
    std::vector<unsigned char> x(kCount * 4), out(kCount * 4);
    for (size_t i = 0; i < kCount; ++i) ref::storeFloat(t, x.data(), i, double(i) - 3.0);
    const void* srcs[] = {x.data()};
    for (const Runner& r : rs) {
      r(out.data(), srcs, 1, kCount, t, ReduceOp::kSum, pre, 1.0);
      bool ok = true;
      for (size_t i = 0; i < kCount; ++i) ok &= std::isnan(ref::loadFloat(t, out.data(), i));
      tally.check(ok, describe(r, t, ReduceOp::kSum, 1, kCount, pre, 1.0, " NaN payload"));
    }
  }
}

// scale(): float types in their accumulation type, integers through double, in place too.
void testScale(Tally& tally, ref::Rng& rng) {
  for (DataType t : kTypes) {
    for (double f : {1.0, 0.5, -2.5}) {
      Case c(t, 1, 1001, rng);
      std::vector<unsigned char> want = ref::reduce(t, c.srcs, c.count, ReduceOp::kSum, f, 1.0);
      std::vector<unsigned char> out(c.count * c.size);
      lk::scale(out.data(), c.srcs[0], c.count, t, f);
      std::string what = std::string("scale ") + lightcc::dtypeName(t) + " by " + std::to_string(f);
      tally.check(ref::firstMismatch(t, out.data(), want.data(), c.count) == c.count, what);
      const unsigned char* src = static_cast<const unsigned char*>(c.srcs[0]);
      std::vector<unsigned char> inPlace(src, src + c.count * c.size);
      lk::scale(inPlace.data(), inPlace.data(), c.count, t, f);
      tally.check(ref::firstMismatch(t, inPlace.data(), want.data(), c.count) == c.count,
                  what + " in place");
    }
  }
}

// reduceElement is the per-element code the CUDA kernel runs (csrc/cuda/reduce.cu); no GPU
// here, so it is held to the same reference on the host, every dtype, op and scale.
template <class T, ReduceOp Op>
void elementLoop(void* dst, const std::vector<const void*>& srcs, size_t count, double pre,
                 double post) {
  const void* const* s = srcs.data();
  for (size_t i = 0; i < count; ++i) {
    static_cast<T*>(dst)[i] = lk::reduceElement<T, Op>(s, int(srcs.size()), i, pre, post);
  }
}

template <class T>
void elementReduceAs(void* dst, const std::vector<const void*>& srcs, size_t count, ReduceOp op,
                     double pre, double post) {
  switch (op) {
    case ReduceOp::kMin: return elementLoop<T, ReduceOp::kMin>(dst, srcs, count, pre, post);
    case ReduceOp::kMax: return elementLoop<T, ReduceOp::kMax>(dst, srcs, count, pre, post);
    case ReduceOp::kProduct:
      return elementLoop<T, ReduceOp::kProduct>(dst, srcs, count, pre, post);
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      if constexpr (std::is_integral_v<T>) {
        if (op == ReduceOp::kBand) return elementLoop<T, ReduceOp::kBand>(dst, srcs, count, pre, post);
        if (op == ReduceOp::kBor) return elementLoop<T, ReduceOp::kBor>(dst, srcs, count, pre, post);
        return elementLoop<T, ReduceOp::kBxor>(dst, srcs, count, pre, post);
      }
      return;  // not called for floats (opApplies)
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum:  // not called
      return elementLoop<T, ReduceOp::kSum>(dst, srcs, count, pre, post);
  }
}

void elementReduce(DataType t, void* dst, const std::vector<const void*>& srcs, size_t count,
                   ReduceOp op, double pre, double post) {
  switch (t) {
    case DataType::kInt8: return elementReduceAs<int8_t>(dst, srcs, count, op, pre, post);
    case DataType::kInt16: return elementReduceAs<int16_t>(dst, srcs, count, op, pre, post);
    case DataType::kUInt16: return elementReduceAs<uint16_t>(dst, srcs, count, op, pre, post);
    case DataType::kInt32: return elementReduceAs<int32_t>(dst, srcs, count, op, pre, post);
    case DataType::kInt64: return elementReduceAs<int64_t>(dst, srcs, count, op, pre, post);
    case DataType::kFloat16: return elementReduceAs<lk::Half>(dst, srcs, count, op, pre, post);
    case DataType::kBFloat16:
      return elementReduceAs<lk::BFloat16>(dst, srcs, count, op, pre, post);
    case DataType::kFloat32: return elementReduceAs<float>(dst, srcs, count, op, pre, post);
    case DataType::kFloat64: return elementReduceAs<double>(dst, srcs, count, op, pre, post);
    default: return elementReduceAs<uint8_t>(dst, srcs, count, op, pre, post);
  }
}

void testDeviceElement(Tally& tally, ref::Rng& rng) {
  const double kScales[][2] = {{1.0, 1.0}, {0.5, 3.0}, {1.0, 1.0 / 3.0}};
  for (DataType t : kTypes) {
    for (int n : {1, 2, 3, 5}) {
      Case c(t, n, 1001, rng);
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct,
                          ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor}) {
        if (!opApplies(t, op)) continue;
        for (const auto& sc : kScales) {
          std::vector<unsigned char> want = ref::reduce(t, c.srcs, c.count, op, sc[0], sc[1]);
          std::vector<unsigned char> got(c.count * c.size);
          elementReduce(t, got.data(), c.srcs, c.count, op, sc[0], sc[1]);
          size_t bad = ref::firstMismatch(t, got.data(), want.data(), c.count);
          char what[160];
          std::snprintf(what, sizeof what, "reduceElement (CUDA path) %s %s n=%d pre=%g post=%g",
                        lightcc::dtypeName(t), lightcc::reduceOpName(op), n, sc[0], sc[1]);
          tally.check(bad == c.count, what);
        }
      }
    }
  }
}

// divideIntegers (integer_average.cc): exact, truncating toward zero; floats untouched.
void testDivideIntegers(Tally& tally) {
  int8_t i8[] = {-7, 7, -128, 127};
  lk::divideIntegers(i8, 4, DataType::kInt8, 2);
  tally.check(i8[0] == -3 && i8[1] == 3 && i8[2] == -64 && i8[3] == 63, "divideIntegers int8");
  uint8_t u8[] = {255, 9, 1};
  lk::divideIntegers(u8, 3, DataType::kUInt8, 3);
  tally.check(u8[0] == 85 && u8[1] == 3 && u8[2] == 0, "divideIntegers uint8");
  int16_t i16[] = {-32768, 32767, -7};
  lk::divideIntegers(i16, 3, DataType::kInt16, 2);
  tally.check(i16[0] == -16384 && i16[1] == 16383 && i16[2] == -3, "divideIntegers int16");
  uint16_t u16[] = {65535, 7};
  lk::divideIntegers(u16, 2, DataType::kUInt16, 4);
  tally.check(u16[0] == 16383 && u16[1] == 1, "divideIntegers uint16");
  int64_t i64[] = {9, (int64_t(1) << 62) + 3, -9};
  lk::divideIntegers(i64, 3, DataType::kInt64, 3);
  tally.check(i64[0] == 3 && i64[1] == ((int64_t(1) << 62) + 3) / 3 && i64[2] == -3,
              "divideIntegers int64 beyond 2^53");
  float f[] = {9.0f};
  lk::divideIntegers(f, 1, DataType::kFloat32, 3);
  tally.check(f[0] == 9.0f, "divideIntegers leaves float32 alone");
}

void testNames(Tally& tally) {
  tally.check(std::strcmp(lightcc::dtypeName(DataType::kBFloat16), "bfloat16") == 0,
              "dtypeName bf16");
  tally.check(std::strcmp(lightcc::dtypeName(DataType::kBool), "bool") == 0, "dtypeName bool");
  tally.check(std::strcmp(lightcc::dtypeName(DataType::kInt16), "int16") == 0 &&
                  std::strcmp(lightcc::dtypeName(DataType::kUInt16), "uint16") == 0 &&
                  lightcc::dtypeSize(DataType::kInt16) == 2 && lightcc::dtypeSize(DataType::kUInt16) == 2,
              "dtypeName/dtypeSize int16 uint16");
  tally.check(std::strcmp(lightcc::reduceOpName(ReduceOp::kAdasum), "Adasum") == 0, "reduceOpName");
  tally.check(std::strcmp(lightcc::reduceOpName(ReduceOp::kProduct), "Product") == 0,
              "reduceOpName");
  tally.check(std::strcmp(lightcc::reduceOpName(ReduceOp::kBand), "Band") == 0 &&
                  std::strcmp(lightcc::reduceOpName(ReduceOp::kBor), "Bor") == 0 &&
                  std::strcmp(lightcc::reduceOpName(ReduceOp::kBxor), "Bxor") == 0,
              "reduceOpName bitwise");
}

// The named counts and validity functions that replaced the magic bounds: every code below the
// count names a value, the first one past it (what a newer peer or a bad caller sends) does not.
void testValidity(Tally& tally) {
  tally.check(lightcc::kNumReduceOps == 9 && lightcc::isValidReduceOp(int(ReduceOp::kBxor)) &&
                  !lightcc::isValidReduceOp(lightcc::kNumReduceOps) && !lightcc::isValidReduceOp(-1) &&
                  !lightcc::isValidReduceOp(255),
              "isValidReduceOp: 0..8 only");
  tally.check(lightcc::isValidDataType(int(DataType::kUInt16)) &&
                  !lightcc::isValidDataType(lightcc::kNumDataTypes) && !lightcc::isValidDataType(-1),
              "isValidDataType: 0..10 only");
  int bitwise = 0;
  for (int code = 0; code < lightcc::kNumReduceOps; ++code) bitwise += lightcc::isBitwiseOp(ReduceOp(code));
  tally.check(bitwise == 3 && lightcc::isBitwiseOp(ReduceOp::kBxor) && !lightcc::isBitwiseOp(ReduceOp::kProduct),
              "isBitwiseOp: Band, Bor, Bxor");
  static_assert(lightcc::kEveryReduceOp == (1u << lightcc::kNumReduceOps) - 1, "kEveryReduceOp lists every op");
  bool taken = true;
  for (ReduceOp op : {ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor}) {
    taken &= lightcc::supportsReduceOp(lightcc::OpType::kAllreduce, op) &&
             lightcc::supportsReduceOp(lightcc::OpType::kReducescatter, op);
  }
  tally.check(taken, "allreduce and reducescatter take Band, Bor, Bxor");
}

// Bitwise ops on known bit patterns, every level, signed types included (bits, not values).
void testBitwiseValues(Tally& tally, const std::vector<Runner>& rs) {
  const int8_t a[] = {-1, 0x55, -128, 0x0f, 0};
  const int8_t b[] = {0x3c, 0x0f, -1, -16, 0};
  const int8_t c[] = {0x70, -1, 0x01, 0x33, 0};
  const void* srcs[] = {a, b, c};
  for (const Runner& r : rs) {
    int8_t out[5];
    r(out, srcs, 3, 5, DataType::kInt8, ReduceOp::kBand, 1.0, 1.0);
    bool ok = out[0] == 0x30 && out[1] == 0x05 && out[2] == 0 && out[3] == 0x00 && out[4] == 0;
    r(out, srcs, 3, 5, DataType::kInt8, ReduceOp::kBor, 1.0, 1.0);
    ok &= out[0] == -1 && out[1] == -1 && out[2] == -1 && out[3] == -1 && out[4] == 0;
    r(out, srcs, 3, 5, DataType::kInt8, ReduceOp::kBxor, 1.0, 1.0);
    ok &= out[0] == int8_t(~0x3c ^ 0x70) && out[1] == int8_t(0x55 ^ 0x0f ^ -1) && out[2] == int8_t(-128 ^ -1 ^ 1) &&
          out[3] == int8_t(0x0f ^ -16 ^ 0x33) && out[4] == 0;
    tally.check(ok, r.name + " int8 Band/Bor/Bxor on known bits");
    const uint8_t t[] = {1, 1, 0, 0}, u[] = {1, 0, 1, 0};
    const void* bools[] = {t, u};
    uint8_t o[4];
    r(o, bools, 2, 4, DataType::kBool, ReduceOp::kBxor, 1.0, 1.0);
    tally.check(o[0] == 0 && o[1] == 1 && o[2] == 1 && o[3] == 0, r.name + " bool Bxor");
  }
}

}  // namespace

int main() {
  Tally tally;
  ref::Rng rng{0x9e3779b97f4a7c15ull};
  std::vector<Runner> rs = runners();
  std::printf("reduce_test: levels");
  for (const Runner& r : rs) std::printf(" %s", r.name.c_str());
  std::printf("\n");

  ref::testHalfConversions([&](bool ok, const std::string& what) { tally.check(ok, what); }, rng);
  testNames(tally);
  testValidity(tally);
  testBitwiseValues(tally, rs);
  testDivideIntegers(tally);
  testDeviceElement(tally, rng);
  testNanPropagation(tally, rs);
  testNanPayloadRounding(tally, rs);
  testScale(tally, rng);
  testAliasing(tally, rs, rng);
  testScaled(tally, rs, rng);
  testMatrix(tally, rs, rng);

  std::printf("%d passed, %d failed\n", tally.passed, tally.failed);
  return tally.failed == 0 ? 0 : 1;
}
