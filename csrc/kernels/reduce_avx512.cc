// The AVX-512 reduction kernels (AVX-512 VL/BW/DQ at 256 bits); see cmake/kernels.cmake for flags.
#define LIGHTCC_KERNEL_ISA avx512

#include <immintrin.h>

#include "kernels/half.h"
#include "kernels/simd_dispatch.h"

namespace lightcc::kernels::avx512 {

// 256-bit vectors on purpose. Measured on Zen 4, 512-bit loops run ~10% slower when the data
// comes from DRAM or L3 (and no faster from L1/L2), and on Intel cores 512-bit instructions may
// lower the clock. What this file adds over reduce_avx2.cc is the AVX-512 instruction set at
// 256 bits (VL/DQ/BW): native int64 min/max/multiply, mask-register selects (NaN handling,
// bfloat16 rounding). -mprefer-vector-width=256 keeps GCC's own widening (uint8 products) at
// 256 bits too; only the tails' small stack copies may still use 512-bit moves.
struct Isa {
  static constexpr int kVecBytes = 32;
  using FloatVec = __m256;
  static LIGHTCC_KERNEL_INLINE FloatVec loadHalf(const Half* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static LIGHTCC_KERNEL_INLINE void storeHalf(Half* p, FloatVec v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

}  // namespace lightcc::kernels::avx512

#include "kernels/reduce_loops.h"

namespace lightcc::kernels {

void reduceAvx512(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                  ReduceOp op, double prescale, double postscale) {
  avx512::reduceAll(dst, srcs, n, count, dtype, op, prescale, postscale);
}

}  // namespace lightcc::kernels
