// The AVX2 top-k loops (32-byte vectors, F16C for float16), chosen at run time by topk_dispatch.cc.
//
// The instruction-set flags sit in this file, as a target pragma, rather than in
// cmake/kernels.cmake: the build lists every topk_*.cc once among the portable sources (which
// gives them -ffp-contract=off), and the pragma opens only after the standard headers, so no
// std:: code in this file is compiled for AVX2. Other processors build an empty file.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/topk_detail.h"

#if defined(__x86_64__)
#if defined(__clang__)  // clang ignores GCC's target pragma; zig's toolchain (packaging/) is clang
#pragma clang attribute push(__attribute__((target("avx2,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,f16c")
#endif
#include <immintrin.h>

#include "kernels/half.h"
#include "kernels/topk_ops.h"

#define LIGHTCC_TOPK_ISA topk_avx2

namespace lightcc::kernels::topk_avx2 {

struct Isa {
  static constexpr int kVecBytes = 32;
  static LIGHTCC_KERNEL_INLINE __m256 loadHalf(const Half* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  template <class V>
  static LIGHTCC_KERNEL_INLINE uint32_t movemask(V lanes) {
    return uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(__m256i(lanes))));
  }
};

}  // namespace lightcc::kernels::topk_avx2

#include "kernels/topk_loops.h"

namespace lightcc::kernels {

const TopkIsaKernels& topkKernelsAvx2() {
  static const TopkIsaKernels table = {"avx2", topk_avx2::filter, topk_avx2::residual,
                                       topk_avx2::momentum};
  return table;
}

}  // namespace lightcc::kernels

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // __x86_64__
