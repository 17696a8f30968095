// The AVX-512 reduction kernels (64-byte vectors); built with -mavx512f/bw/dq/vl -mavx2 -mf16c.
#define LIGHTCC_KERNEL_ISA avx512

#include <immintrin.h>

#include "kernels/half.h"
#include "kernels/simd_dispatch.h"

namespace lightcc::kernels::avx512 {

struct Isa {
  static constexpr int kVecBytes = 64;
  using FloatVec = __m512;
  // The maskz forms: the unmasked ones trip GCC 12's -Wmaybe-uninitialized in its own header.
  static LIGHTCC_KERNEL_INLINE FloatVec loadHalf(const Half* p) {
    return _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static LIGHTCC_KERNEL_INLINE void storeHalf(Half* p, FloatVec v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_maskz_cvtps_ph(0xffff, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
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
