// Per-element top-k arithmetic (magnitude keys, radix digits, residual, momentum): host and CUDA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/half.h"

// Shared by the CPU kernels (topk_loops.h, topk_select.cc, ...) and csrc/cuda/topk.cu, so a GPU
// rank and a CPU rank select the same entries and update residuals to the same bits, and the
// CPU tests exercise the arithmetic the GPU runs.
//
// Ordering: an entry's magnitude is its float bit pattern with the sign cleared, read as an
// unsigned integer (its "key"). For non-NaN values this orders exactly as |v| (and -0 == +0);
// NaNs get keys above +inf, so a diverged gradient is always selected and reaches every rank
// instead of hiding in a residual. Top-k means: the k largest keys, and among equal keys the
// lowest indices. That set is unique, so every path (sampled, exact, CUDA) returns the same.
//
// float16/bfloat16 values are ranked through their exact float value, so keys of every dtype
// live in one space. Keys never exceed kMaxKey.

namespace lightcc::kernels {

constexpr uint32_t kMaxKey = 0x7fffffffu;

static inline LIGHTCC_HD uint32_t magnitudeKey(float v) { return floatBits(v) & kMaxKey; }
static inline LIGHTCC_HD uint32_t magnitudeKey(Half v) { return magnitudeKey(halfToFloat(v.bits)); }
static inline LIGHTCC_HD uint32_t magnitudeKey(BFloat16 v) {
  return uint32_t(v.bits & 0x7fffu) << 16;
}

static inline LIGHTCC_HD float toFloat(float v) { return v; }
static inline LIGHTCC_HD float toFloat(Half v) { return halfToFloat(v.bits); }
static inline LIGHTCC_HD float toFloat(BFloat16 v) { return bf16ToFloat(v.bits); }

// The threshold test: lo <= key <= hi. Templated so the CPU loops pass int32 vectors (keys and
// bounds are <= kMaxKey, so signed lanes compare correctly); lanes come back as -1/0.
template <class K>
static inline LIGHTCC_HD auto keyInRange(K key, K lo, K hi) {
  return (key >= lo) & (key <= hi);
}

// DGC's "too few survived, lower the threshold": |t| * 0.8 as a key. Strictly smaller than a
// non-zero `key`, so every retry makes progress; inf and NaN keys step to the largest finite
// float, and 0 (every entry already passes) stays 0.
static inline LIGHTCC_HD uint32_t lowerThresholdKey(uint32_t key) {
  if (key == 0) return 0;
  if (key >= 0x7f800000u) return 0x7f7fffffu;
  uint32_t lower = magnitudeKey(bitsFloat(key) * 0.8f);
  return lower < key ? lower : key - 1;
}

// ---- Exact selection by radix: three digit passes over the 31-bit keys, high digit first. ----
// Pass p histograms digit p of every key that matches the digits already chosen, then
// radixAdvance picks the bucket holding the `need`-th largest key. After the last pass
// `prefix` is the k-th largest key T; `need` of the keys equal to T belong to the top k (the
// lowest-indexed ones), and `equal` keys equal T in all.
constexpr int kRadixPasses = 3;
constexpr int kRadixBins = 2048;  // the widest digit (11 bits): the histogram's size

static inline LIGHTCC_HD int radixShift(int pass) { return pass == 0 ? 20 : pass == 1 ? 9 : 0; }
static inline LIGHTCC_HD uint32_t radixBins(int pass) { return pass == 2 ? 512u : 2048u; }

struct RadixState {
  uint32_t prefix;  // digits chosen so far, in place
  uint32_t mask;    // which bits of prefix are chosen
  uint64_t need;    // how many of the matching keys still belong to the top k (>= 1)
  uint64_t equal;   // keys in the chosen bucket of the last pass
};

static inline LIGHTCC_HD RadixState radixStart(uint64_t k) { return RadixState{0u, 0u, k, 0u}; }

static inline LIGHTCC_HD bool radixMatches(const RadixState& s, uint32_t key) {
  return (key & s.mask) == s.prefix;
}

static inline LIGHTCC_HD uint32_t radixDigit(uint32_t key, int pass) {
  return (key >> radixShift(pass)) & (radixBins(pass) - 1);
}

// Walks the histogram of pass `pass` from the largest digit down and narrows the state to the
// bucket holding the need-th largest matching key. Precondition: the histogram counts at least
// `need` keys (the caller's k <= n guarantees it).
static inline LIGHTCC_HD void radixAdvance(RadixState& s, const uint32_t* hist, int pass) {
  uint64_t above = 0;
  uint32_t b = radixBins(pass) - 1;
  while (b > 0 && above + hist[b] < s.need) above += hist[b--];
  s.prefix |= b << radixShift(pass);
  s.mask |= (radixBins(pass) - 1) << radixShift(pass);
  s.need -= above;
  s.equal = hist[b];
}

// Order-preserving output of the top k, given the k-th largest key T and `need`: an entry is
// kept when its key is above T, or equals T and fewer than `need` equal keys precede it. A kept
// entry's slot counts the kept entries before it.
static inline LIGHTCC_HD bool topkKeeps(uint32_t key, uint32_t kth, uint64_t tiesBefore,
                                        uint64_t need) {
  return key > kth || (key == kth && tiesBefore < need);
}
static inline LIGHTCC_HD uint64_t topkSlot(uint64_t aboveBefore, uint64_t tiesBefore,
                                           uint64_t need) {
  return aboveBefore + (tiesBefore < need ? tiesBefore : need);
}

// ---- Error feedback and DGC momentum correction ----
// Spelled without fused multiply-add (the kernels build with -ffp-contract=off / --fmad=false,
// and the device path names the rounding explicitly) so CPU and GPU residuals match bit for bit.
static inline LIGHTCC_HD float mulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
static inline LIGHTCC_HD float addRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// residual + scale * grad. The template takes the CPU loops' float vectors.
template <class V>
static inline LIGHTCC_HD V residualStep(V residual, V grad, V scale) {
  return residual + scale * grad;
}
static inline LIGHTCC_HD float residualStep(float residual, float grad, float scale) {
  return addRn(residual, mulRn(scale, grad));
}

// DGC momentum correction: u = m * u + g, then v = v + u (with the new u).
template <class V>
static inline LIGHTCC_HD void momentumStep(V& u, V& v, V grad, V momentum) {
  u = momentum * u + grad;
  v = v + u;
}
static inline LIGHTCC_HD void momentumStep(float& u, float& v, float grad, float momentum) {
  u = addRn(mulRn(momentum, u), grad);
  v = addRn(v, u);
}

// A selected value leaving in its wire dtype (float32, or rounded to 16 bits, nearest even).
static inline LIGHTCC_HD void storeWire(float v, float* out) { *out = v; }
static inline LIGHTCC_HD void storeWire(float v, Half* out) { out->bits = floatToHalf(v); }
static inline LIGHTCC_HD void storeWire(float v, BFloat16* out) { out->bits = floatToBf16(v); }
// What the residual keeps of selected value v once it left as w: the rounding error, or 0 when
// that is not finite (inf or NaN leave whole, as an exact selection clears them).
static inline LIGHTCC_HD float wireRemainder(float v, float w) {
  const float rest = addRn(v, -w);
  return rest - rest == 0.0f ? rest : 0.0f;
}

}  // namespace lightcc::kernels
