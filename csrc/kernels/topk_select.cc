// Top-k selection: DGC's sampled threshold with an exact finish, and the exact radix path.
//
// Sampled path (count >= kMinSampledCount), after Deep Gradient Compression:
//   1. Read ~1 % of the magnitude keys with a stride, from a start drawn from the seed.
//   2. Threshold = the sample's key that keeps k * samples / count entries, plus a 3-sigma
//      margin so the real survivors almost always number >= k (without it half of all calls
//      would need a second pass over the input).
//   3. One vectorised pass stores every entry with key >= threshold (in index order, at most
//      `cap`). If k <= survivors <= cap, the exact top k of the survivors is the exact top k of
//      the input (every entry above the k-th largest survived): radix select on the survivors
//      and write them out in order. Done, in one full pass.
//   4. Too few survived: lower the threshold (x0.8) and pass again, at most kMaxLowerings times.
//   5. Far too many (more than cap): the sample misled; exact path.
// Ties: when the threshold lands on a heavily repeated value (mostly-zero gradients), step 3
// would overflow on the ties. Then the pass keeps entries strictly above it and pads with the
// lowest-indexed entries equal to it (a second, early-exit pass): still the exact top k.
//
// Exact path (small inputs, and the fallback): radix select over the input gives the k-th
// largest key T and how many entries equal to T to take; one pass stores the entries above T,
// one early-exit pass the first ties; the two ascending lists are merged.
//
// Whichever path runs, the output is topk_ops.h's unique top k, so the seed only moves time.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/half.h"
#include "kernels/topk.h"
#include "kernels/topk_detail.h"
#include "kernels/topk_ops.h"

namespace lightcc::kernels {
namespace {

constexpr size_t kMinSampledCount = size_t(1) << 13;  // measured: sampling wins from here up
constexpr size_t kSampleDivisor = 100;                // sample ~1 % of the entries ...
constexpr size_t kMinSamples = 4096;                  // ... but enough to place a threshold
constexpr double kMarginSigmas = 3.0;
constexpr int kMaxLowerings = 4;

// The caller broke the contract in topk.h: a bug in lightcc, not a runtime condition.
[[noreturn]] void contractViolation(const char* what, size_t a, size_t b) {
  std::fprintf(stderr, "lightcc: internal error: top-k selection: %s (%zu, %zu)\n", what, a, b);
  std::abort();
}

void grow(std::vector<uint32_t>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

uint64_t splitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// One selection: where it reads, where it writes, with which loops and buffers.
struct Job {
  const TopkIsaKernels& isa;
  const void* values;
  DataType dtype;
  size_t count;
  size_t k;
  uint32_t* idxOut;
  void* valOut;
  TopkScratch& s;

  size_t filter(uint32_t lo, uint32_t hi, size_t cap, uint32_t* idx, uint32_t* raw) const {
    if (lo > kMaxKey) return 0;  // "strictly above the largest key"
    ++s.filterPasses;
    return isa.filter(values, dtype, count, lo, hi, cap, idx, raw);
  }

  uint32_t keyOfRaw(uint32_t raw) const {
    if (dtype == DataType::kFloat16) return magnitudeKey(Half{uint16_t(raw)});
    if (dtype == DataType::kBFloat16) return magnitudeKey(BFloat16{uint16_t(raw)});
    return raw & kMaxKey;
  }

  void write(size_t slot, uint32_t index, uint32_t raw) const {
    idxOut[slot] = index;
    if (dtype == DataType::kFloat32) {
      std::memcpy(static_cast<float*>(valOut) + slot, &raw, sizeof raw);
    } else {
      static_cast<uint16_t*>(valOut)[slot] = uint16_t(raw);
    }
  }
};

// Writes two disjoint ascending lists as one ascending list of na + nb == k entries.
void emitMerged(const Job& j, size_t na, size_t nb) {
  const TopkScratch& s = j.s;
  size_t a = 0, b = 0;
  for (size_t slot = 0; slot < na + nb; ++slot) {
    if (b == nb || (a < na && s.aboveIdx[a] < s.tieIdx[b])) {
      j.write(slot, s.aboveIdx[a], s.aboveRaw[a]);
      ++a;
    } else {
      j.write(slot, s.tieIdx[b], s.tieRaw[b]);
      ++b;
    }
  }
}

// The exact top k of n >= k survivors in aboveIdx/aboveRaw (ascending), written in order.
void emitFromSurvivors(const Job& j, size_t n) {
  TopkScratch& s = j.s;
  grow(s.keys, n);
  for (size_t i = 0; i < n; ++i) s.keys[i] = j.keyOfRaw(s.aboveRaw[i]);
  KthKey kth = kthLargestKey(s.keys.data(), n, j.k, s.hist.data());
  uint64_t above = 0, ties = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t key = s.keys[i];
    if (topkKeeps(key, kth.key, ties, kth.need)) {
      j.write(topkSlot(above, ties, kth.need), s.aboveIdx[i], s.aboveRaw[i]);
    }
    above += key > kth.key;
    ties += key == kth.key;
  }
  if (above + kth.need != j.k) contractViolation("survivor count off", above, j.k);
}

void selectExact(const Job& j) {
  TopkScratch& s = j.s;
  KthKey kth = kthLargestKeyOf(j.values, j.dtype, j.count, j.k, s.hist.data());
  size_t nAbove = j.k - kth.need;
  grow(s.aboveIdx, nAbove), grow(s.aboveRaw, nAbove);
  grow(s.tieIdx, kth.need), grow(s.tieRaw, kth.need);
  size_t a = j.filter(kth.key + 1, kMaxKey, nAbove, s.aboveIdx.data(), s.aboveRaw.data());
  size_t b = j.filter(kth.key, kth.key, kth.need, s.tieIdx.data(), s.tieRaw.data());
  if (a != nAbove || b < kth.need) contractViolation("exact pass count off", a, b);
  emitMerged(j, nAbove, kth.need);
}

struct SamplePlan {
  size_t samples, stride, start;
  size_t rank;  // the sample key at this rank (1 = largest) becomes the threshold
};

SamplePlan planSample(size_t count, size_t k, uint64_t seed) {
  SamplePlan p;
  p.samples = count / kSampleDivisor > kMinSamples ? count / kSampleDivisor : kMinSamples;
  if (p.samples > count) p.samples = count;
  p.stride = count / p.samples;
  p.start = size_t(splitMix64(seed) % p.stride);
  double expected = double(k) * double(p.samples) / double(count);
  double rank = std::ceil(expected + kMarginSigmas * std::sqrt(expected)) + 1.0;
  p.rank = rank >= double(p.samples) ? p.samples : size_t(rank);
  return p;
}

template <class S>
void gatherSampleKeys(const void* values, const SamplePlan& p, uint32_t* keys) {
  const S* v = static_cast<const S*>(values) + p.start;
  for (size_t i = 0; i < p.samples; ++i) keys[i] = magnitudeKey(v[i * p.stride]);
}

// Steps 1-5 of the file comment. False: the sample misled, take the exact path.
bool selectSampled(const Job& j, const SamplePlan& p) {
  TopkScratch& s = j.s;
  grow(s.sampleKeys, p.samples);
  uint32_t* keys = s.sampleKeys.data();
  if (j.dtype == DataType::kFloat16) gatherSampleKeys<Half>(j.values, p, keys);
  else if (j.dtype == DataType::kBFloat16) gatherSampleKeys<BFloat16>(j.values, p, keys);
  else gatherSampleKeys<float>(j.values, p, keys);
  KthKey t = kthLargestKey(keys, p.samples, p.rank, s.hist.data());

  // Room for 1.5x the expected survivors: overflowing it means the sample was far off.
  double perSample = double(j.count) / double(p.samples);
  double expected = double(p.rank) * perSample;
  size_t cap = size_t(expected * 1.5) + 4096;
  if (cap < j.k) cap = j.k;
  if (cap > j.count) cap = j.count;
  grow(s.aboveIdx, cap), grow(s.aboveRaw, cap);

  double sampledAtOrAbove = double(p.rank - t.need + t.equal);
  bool tieMode = sampledAtOrAbove * perSample > 0.75 * double(cap);
  uint32_t lo = tieMode ? t.key + 1 : t.key;
  for (int lowerings = 0; lowerings <= kMaxLowerings; ++lowerings) {
    size_t n = j.filter(lo, kMaxKey, cap, s.aboveIdx.data(), s.aboveRaw.data());
    if (n > cap) return false;
    if (n >= j.k) {
      emitFromSurvivors(j, n);
      s.outcome = TopkOutcome::kSurvivors;
      return true;
    }
    if (tieMode) {
      size_t need = j.k - n;
      grow(s.tieIdx, need), grow(s.tieRaw, need);
      if (j.filter(t.key, t.key, need, s.tieIdx.data(), s.tieRaw.data()) >= need) {
        emitMerged(j, n, need);
        s.outcome = TopkOutcome::kTiePadding;
        return true;
      }
      tieMode = false;  // fewer ties than needed: smaller keys belong in too
      lo = t.key;
    }
    lo = lowerThresholdKey(lo);
  }
  return false;
}

void selectAll(const Job& j) {
  for (size_t i = 0; i < j.count; ++i) j.idxOut[i] = uint32_t(i);
  std::memcpy(j.valOut, j.values, j.count * dtypeSize(j.dtype));
}

bool selectableType(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat16 ||
         dtype == DataType::kBFloat16;
}

}  // namespace

void selectTopkWith(const TopkIsaKernels& isa, TopkPath path, const void* values, DataType dtype,
                    size_t count, size_t k, uint64_t seed, uint32_t* indicesOut, void* valuesOut,
                    TopkScratch& scratch) {
  if (count > kMaxTopkCount) contractViolation("count above kMaxTopkCount", count, k);
  if (k > count) contractViolation("k above count", k, count);
  if (!selectableType(dtype)) contractViolation("dtype", size_t(dtype), 0);
  scratch.filterPasses = 0;
  Job j{isa, values, dtype, count, k, indicesOut, valuesOut, scratch};
  if (k == count) {  // includes k == 0
    selectAll(j);
    scratch.outcome = TopkOutcome::kAll;
    return;
  }
  grow(scratch.hist, 4 * size_t(kRadixBins));
  bool sampled = path == TopkPath::kSampled ||
                 (path == TopkPath::kAuto && count >= kMinSampledCount);
  SamplePlan plan = planSample(count, k, seed);
  // When k plus its margin is the whole sample, no sampled key can serve as a threshold (the
  // smallest one would leave out the entries below it): skip the futile passes.
  sampled = sampled && plan.rank < plan.samples;
  if (sampled && selectSampled(j, plan)) return;
  selectExact(j);
  scratch.outcome = sampled ? TopkOutcome::kFallback : TopkOutcome::kExact;
}

void selectTopk(const float* values, size_t count, size_t k, uint64_t seed, uint32_t* indicesOut,
                float* valuesOut, TopkScratch& scratch) {
  selectTopkWith(topkKernels(), TopkPath::kAuto, values, DataType::kFloat32, count, k, seed,
                 indicesOut, valuesOut, scratch);
}

Status selectTopkAny(const void* values, DataType dtype, size_t count, size_t k, uint64_t seed,
                     uint32_t* indicesOut, void* valuesOut, TopkScratch& scratch) {
  if (!selectableType(dtype)) {
    return Status::InvalidArgument(std::string("top-k selection supports float32, float16 and "
                                               "bfloat16, not ") + dtypeName(dtype));
  }
  selectTopkWith(topkKernels(), TopkPath::kAuto, values, dtype, count, k, seed, indicesOut,
                 valuesOut, scratch);
  return Status::OK();
}

}  // namespace lightcc::kernels
