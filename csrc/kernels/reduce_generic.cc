// The portable reduction kernels: 16-byte GCC vectors (SSE2 on x86-64, NEON on aarch64).
#define LIGHTCC_KERNEL_ISA generic

#include <cstdint>

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "kernels/half.h"
#include "kernels/simd_dispatch.h"

namespace lightcc::kernels::generic {

struct Isa {
  static constexpr int kVecBytes = 16;
  typedef float FloatVec __attribute__((vector_size(16)));
  typedef uint32_t U32 __attribute__((vector_size(16)));
  typedef int32_t I32 __attribute__((vector_size(16)));
  typedef uint16_t U16 __attribute__((vector_size(8)));

  // AArch64's base SIMD converts halves in one instruction each way (fcvtl/fcvtn: IEEE, round to
  // nearest even, NaN quieted with its payload kept, as F16C). Elsewhere no portable instruction
  // does, so the conversions below are half.h's redone lane-wise with integer ops and selects.
  // The tests hold both to bit equality with half.h.
#if defined(__aarch64__)
  static LIGHTCC_KERNEL_INLINE FloatVec loadHalf(const Half* p) {
    return FloatVec(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(&p->bits))));
  }
  static LIGHTCC_KERNEL_INLINE void storeHalf(Half* p, FloatVec v) {
    vst1_u16(&p->bits, vreinterpret_u16_f16(vcvt_f16_f32(float32x4_t(v))));
  }
#else
  static LIGHTCC_KERNEL_INLINE FloatVec loadHalf(const Half* p) {
    U16 raw;
    __builtin_memcpy(&raw, p, sizeof raw);
    U32 h = __builtin_convertvector(raw, U32);
    U32 sign = (h & 0x8000u) << 16;
    U32 o = (h & 0x7fffu) << 13;
    U32 exp = o & 0x0f800000u;
    o += 112u << 23;  // re-bias 15 -> 127
    I32 infNan = exp == 0x0f800000u;
    I32 subnormal = exp == 0u;
    U32 quiet = ((h & 0x3ffu) != 0u) ? U32{} + 0x400000u : U32{};
    o = infNan ? ((o + (112u << 23)) | quiet) : o;
    // Subnormal: build 2^-14 * (1 + m/1024), then subtract 2^-14 exactly (Sterbenz).
    FloatVec magic = FloatVec(U32{} + (113u << 23));
    U32 sub = U32(FloatVec(o + (1u << 23)) - magic);
    o = subnormal ? sub : o;
    return FloatVec(o | sign);
  }

  static LIGHTCC_KERNEL_INLINE void storeHalf(Half* p, FloatVec v) {
    U32 x = U32(v);
    U32 sign = (x >> 16) & 0x8000u;
    U32 a = x & 0x7fffffffu;
    U32 normal = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
    // Below 2^-14: adding 0.5f lines the half-subnormal unit (2^-24) up with float's last bit,
    // so the hardware add does the round-to-nearest-even (default rounding mode).
    FloatVec half = FloatVec(U32{} + (126u << 23));
    U32 sub = U32(FloatVec(a) + half) - (126u << 23);
    U32 r = (a < 0x38800000u) ? sub : normal;
    r = (a >= 0x47800000u) ? U32{} + 0x7c00u : r;
    r = (a > 0x7f800000u) ? (0x7e00u | ((a >> 13) & 0x3ffu)) : r;
    U16 out = __builtin_convertvector(r | sign, U16);
    __builtin_memcpy(p, &out, sizeof out);
  }
#endif
};

}  // namespace lightcc::kernels::generic

#include "kernels/reduce_loops.h"

namespace lightcc::kernels {

void reduceGeneric(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                   ReduceOp op, double prescale, double postscale) {
  generic::reduceAll(dst, srcs, n, count, dtype, op, prescale, postscale);
}

}  // namespace lightcc::kernels
