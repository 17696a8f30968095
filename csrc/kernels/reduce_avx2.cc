// The AVX2 reduction kernels (32-byte vectors, F16C for float16); built with -mavx2 -mf16c.
#define LIGHTCC_KERNEL_ISA avx2

#include <immintrin.h>

#include "kernels/half.h"
#include "kernels/simd_dispatch.h"

namespace lightcc::kernels::avx2 {

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

}  // namespace lightcc::kernels::avx2

#include "kernels/reduce_loops.h"

namespace lightcc::kernels {

void reduceAvx2(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                ReduceOp op, double prescale, double postscale) {
  avx2::reduceAll(dst, srcs, n, count, dtype, op, prescale, postscale);
}

}  // namespace lightcc::kernels
