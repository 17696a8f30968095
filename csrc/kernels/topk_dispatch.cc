// Picks the top-k loops for this CPU once, with the same levels and CPUID test as the reductions.
#include "kernels/simd_dispatch.h"
#include "kernels/topk_detail.h"

namespace lightcc::kernels {

const TopkIsaKernels* topkKernelsAt(SimdLevel level) {
  // simdLevelSupported answers for the reduction kernels, which this build compiles under the
  // same condition (x86-64) and whose CPU requirements are a superset of ours.
  if (!simdLevelSupported(level)) return nullptr;
  switch (level) {
#if defined(__x86_64__)
    case SimdLevel::kAvx512: return &topkKernelsAvx512();
    case SimdLevel::kAvx2: return &topkKernelsAvx2();
#else
    case SimdLevel::kAvx512:
    case SimdLevel::kAvx2: return nullptr;  // not built off x86-64 (simdLevelSupported said so)
#endif
    case SimdLevel::kGeneric: return &topkKernelsGeneric();
  }
  return nullptr;
}

const TopkIsaKernels& topkKernels() {
  static const TopkIsaKernels* best = topkKernelsAt(bestSimdLevel());  // CPUID once
  return *best;
}

}  // namespace lightcc::kernels
