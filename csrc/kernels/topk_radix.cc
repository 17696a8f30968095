// Exact k-th largest magnitude key by radix passes (topk_ops.h), over key arrays or raw inputs.
#include <cstring>

#include "kernels/half.h"
#include "kernels/topk_detail.h"
#include "kernels/topk_ops.h"

namespace lightcc::kernels {
namespace {

// Histograms digit `pass` of the keys that match the state. Four interleaved sub-histograms:
// runs of equal keys (zeros, ties) would otherwise serialise on one counter's store-to-load
// forwarding. `sub` holds 4 * kRadixBins counters; the first kRadixBins receive the sum.
template <class KeyAt>
void histogram(KeyAt keyAt, size_t n, const RadixState& s, int pass, uint32_t* sub) {
  uint32_t bins = radixBins(pass);
  std::memset(sub, 0, 4 * kRadixBins * sizeof(uint32_t));
  size_t i = 0;
  if (pass == 0) {  // nothing chosen yet: every key matches, skip the test
    for (; i + 4 <= n; i += 4) {
      for (int j = 0; j < 4; ++j) ++sub[j * kRadixBins + radixDigit(keyAt(i + j), 0)];
    }
  }
  for (; i < n; ++i) {
    uint32_t key = keyAt(i);
    if (radixMatches(s, key)) ++sub[radixDigit(key, pass)];
  }
  for (uint32_t b = 0; b < bins; ++b) {
    sub[b] += sub[kRadixBins + b] + sub[2 * kRadixBins + b] + sub[3 * kRadixBins + b];
  }
}

template <class KeyAt>
KthKey kthLargest(KeyAt keyAt, size_t n, size_t k, uint32_t* hist) {
  RadixState s = radixStart(k);
  for (int pass = 0; pass < kRadixPasses; ++pass) {
    histogram(keyAt, n, s, pass, hist);
    radixAdvance(s, hist, pass);
  }
  return KthKey{s.prefix, s.need, s.equal};
}

template <class S>
KthKey kthLargestTyped(const void* values, size_t n, size_t k, uint32_t* hist) {
  const S* v = static_cast<const S*>(values);
  return kthLargest([v](size_t i) { return magnitudeKey(v[i]); }, n, k, hist);
}

}  // namespace

KthKey kthLargestKey(const uint32_t* keys, size_t n, size_t k, uint32_t* hist) {
  return kthLargest([keys](size_t i) { return keys[i]; }, n, k, hist);
}

KthKey kthLargestKeyOf(const void* values, DataType dtype, size_t n, size_t k, uint32_t* hist) {
  switch (dtype) {
    case DataType::kFloat16: return kthLargestTyped<Half>(values, n, k, hist);
    case DataType::kBFloat16: return kthLargestTyped<BFloat16>(values, n, k, hist);
    case DataType::kFloat32: return kthLargestTyped<float>(values, n, k, hist);
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      break;
  }
  contractViolation("top-k selection dtype", int(dtype));
}

}  // namespace lightcc::kernels
