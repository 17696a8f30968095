// float16 / bfloat16 <-> float32 conversion, bit-exact on host and CUDA device.
#pragma once

#include <cstdint>
#include <cstring>

// __host__ __device__ under nvcc so the CPU kernels and the CUDA kernels share one arithmetic.
#if defined(__CUDACC__)
#define LIGHTCC_HD __host__ __device__
#else
#define LIGHTCC_HD
#endif

// Everything here is `static inline`: the kernels are compiled several times with different
// -m flags (avx2, avx512, generic), and internal linkage keeps the linker from picking, say, the
// AVX-512 copy of an out-of-line helper for the generic path.

namespace lightcc::kernels {

// Storage types: 16 bits each, distinct so templates can tell the two formats apart.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

static inline LIGHTCC_HD uint32_t floatBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline LIGHTCC_HD float bitsFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// Exact (every half is a float). NaNs come back quiet with their payload kept, as F16C does.
static inline LIGHTCC_HD float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) {
    if (mant != 0) mant |= 0x200u;  // quiet the NaN
    return bitsFloat(sign | 0x7f800000u | (mant << 13));
  }
  if (exp == 0) {
    if (mant == 0) return bitsFloat(sign);
    // Subnormal half: shift the leading one up to the implicit-bit position.
    int e = 1;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    return bitsFloat(sign | (uint32_t(e + 112) << 23) | ((mant & 0x3ffu) << 13));
  }
  return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

// Round to nearest, ties to even; overflow -> inf; results below 2^-14 become subnormals
// (or zero) with correct rounding. NaN -> quiet NaN keeping the top payload bits (as F16C).
// Integer-only, so it does not depend on the FPU's rounding mode or FTZ/DAZ.
static inline LIGHTCC_HD uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x47800000u) return uint16_t(sign | 0x7c00u);  // >= 65536: inf (or was inf)
  if (abs >= 0x38800000u) {
    // Normal half. Re-bias the exponent (127 -> 15) and add the RNE bias; a mantissa carry
    // rolls into the exponent, which is exactly right (65520 and up become inf).
    uint32_t odd = (abs >> 13) & 1u;
    abs = abs - (112u << 23) + 0xfffu + odd;
    return uint16_t(sign | (abs >> 13));
  }
  // Subnormal half: value in units of 2^-24 is mant24 >> shift, rounded to nearest even.
  uint32_t exp = abs >> 23;
  if (exp < 102) return uint16_t(sign);  // below 2^-25: rounds to zero (ties included)
  uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - exp;  // 14..24
  uint32_t r = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1);
  uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
  return uint16_t(sign | r);
}

static inline LIGHTCC_HD float bf16ToFloat(uint16_t b) { return bitsFloat(uint32_t(b) << 16); }

// Round to nearest, ties to even; NaN stays NaN (quieted, payload's top bits kept).
static inline LIGHTCC_HD uint16_t floatToBf16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

}  // namespace lightcc::kernels
