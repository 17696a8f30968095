// Per-element reduction arithmetic (combine, scale, accumulate type) shared by CPU and CUDA.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/half.h"

// Semantics fixed here, for every path (CPU SIMD, CPU generic, CUDA):
// - Sum and Product of integers wrap (two's complement), computed in the unsigned type.
// - Min/Max propagate NaN: if either operand is NaN the result is NaN (the first NaN in source
//   order), like numpy.maximum / torch.max, so a diverged gradient is never silently hidden.
//   Between -0 and +0 (equal) the later operand wins.
// - float16/bfloat16 accumulate in float; float32 scales by float(factor); float64 by factor.
// - Integers scale through double, truncate toward zero and saturate at the type's limits
//   (NaN -> 0): the contract says "truncate", saturation makes out-of-range defined.
// - Band/Bor/Bxor act on the bits of integer and bool elements; floats are refused before any
//   kernel runs (engine/validate.cc), so no float instantiation of them exists.
// Functions are templates over T so the CPU kernels can pass GCC vector types too.

namespace lightcc::kernels {

template <class T>
static inline LIGHTCC_HD T maxOf(T a, T b) {
  return ((a > b) | (a != a)) ? a : b;
}

template <class T>
static inline LIGHTCC_HD T minOf(T a, T b) {
  return ((a < b) | (a != a)) ? a : b;
}

// The type in which + and * wrap instead of overflowing (undefined for signed integers).
template <class T> struct WrapType { using type = T; };
template <> struct WrapType<int8_t> { using type = uint8_t; };
// 16-bit operands would promote to int, whose product can overflow: wrap in 32 bits instead.
template <> struct WrapType<int16_t> { using type = uint32_t; };
template <> struct WrapType<uint16_t> { using type = uint32_t; };
template <> struct WrapType<int32_t> { using type = uint32_t; };
template <> struct WrapType<int64_t> { using type = uint64_t; };

template <ReduceOp Op, class T>
static inline LIGHTCC_HD T combineAs(T a, T b) {
  using W = typename WrapType<T>::type;
  static_assert(Op != ReduceOp::kAdasum, "Adasum is not element-wise (algorithms/adasum.h)");
  if constexpr (Op == ReduceOp::kMin) {
    return minOf(a, b);
  } else if constexpr (Op == ReduceOp::kMax) {
    return maxOf(a, b);
  } else if constexpr (Op == ReduceOp::kProduct) {
    return T(W(a) * W(b));
  } else if constexpr (Op == ReduceOp::kBand) {
    return a & b;  // integer (and bool-as-uint8) lanes only: the dispatchers refuse floats
  } else if constexpr (Op == ReduceOp::kBor) {
    return a | b;
  } else if constexpr (Op == ReduceOp::kBxor) {
    return a ^ b;
  } else {
    static_assert(Op == ReduceOp::kSum || Op == ReduceOp::kAverage, "combineAs: a ReduceOp without arithmetic");
    return T(W(a) + W(b));  // kAverage reduces as kSum (the caller folds 1/size into postscale)
  }
}

// Accumulation type and the conversions in and out of it.
template <class T> struct AccOf { using type = T; };
template <> struct AccOf<Half> { using type = float; };
template <> struct AccOf<BFloat16> { using type = float; };

template <class T>
static inline LIGHTCC_HD typename AccOf<T>::type toAcc(T x) { return x; }
static inline LIGHTCC_HD float toAcc(Half x) { return halfToFloat(x.bits); }
static inline LIGHTCC_HD float toAcc(BFloat16 x) { return bf16ToFloat(x.bits); }

// Native types pass through; Half and BFloat16 round once, to nearest even.
template <class T>
static inline LIGHTCC_HD T fromAcc(typename AccOf<T>::type x) {
  return x;
}
template <>
inline LIGHTCC_HD Half fromAcc<Half>(float x) { return Half{floatToHalf(x)}; }
template <>
inline LIGHTCC_HD BFloat16 fromAcc<BFloat16>(float x) { return BFloat16{floatToBf16(x)}; }

// Integer limits without <limits> (whose members are not __device__).
template <class T> struct IntRange;
template <> struct IntRange<uint8_t> { static constexpr double kLo = 0, kHi = 255; };
template <> struct IntRange<int8_t> { static constexpr double kLo = -128, kHi = 127; };
template <> struct IntRange<uint16_t> { static constexpr double kLo = 0, kHi = 65535; };
template <> struct IntRange<int16_t> { static constexpr double kLo = -32768, kHi = 32767; };
template <> struct IntRange<int32_t> {
  static constexpr double kLo = -2147483648.0, kHi = 2147483647.0;
};
// 2^63 is the first double above INT64_MAX; -2^63 is exactly INT64_MIN.
template <> struct IntRange<int64_t> {
  static constexpr double kLo = -9223372036854775808.0, kHi = 9223372036854775808.0;
};

// double -> integer: truncate toward zero, saturate, NaN -> 0.
template <class T>
static inline LIGHTCC_HD T saturatingCast(double v) {
  if (!(v == v)) return T(0);
  if (v <= IntRange<T>::kLo) return T(IntRange<T>::kLo);
  if (v >= IntRange<T>::kHi) {
    if constexpr (sizeof(T) == 8) return T(0x7fffffffffffffffLL);
    else return T(IntRange<T>::kHi);
  }
  return T(v);
}

// factor * x in the accumulation type: float for float32/16/bf16, double for float64,
// through double with saturation for integers.
// On the device the multiply is spelled __fmul_rn/__dmul_rn, which nvcc never fuses with a
// following add into an FMA: a fused result would differ from the CPU's in the last bit.
static inline LIGHTCC_HD float scaleAcc(float x, double factor) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(x, float(factor));
#else
  return x * float(factor);
#endif
}
static inline LIGHTCC_HD double scaleAcc(double x, double factor) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(x, factor);
#else
  return x * factor;
#endif
}
template <class T>
static inline LIGHTCC_HD T scaleAcc(T x, double factor) {
  return saturatingCast<T>(double(x) * factor);
}

// A factor of exactly 1 is skipped, not applied: int64 values beyond 2^53 would not survive a
// trip through double (for floats it changes nothing).
template <class A>
static inline LIGHTCC_HD A scaleUnlessOne(A x, double factor) {
  return factor == 1.0 ? x : scaleAcc(x, factor);
}

// One output element of reduceN, exactly as the CUDA kernel computes it; host-callable so the
// C++ tests can hold the device arithmetic to the CPU reference. srcs[j] yields a const void*.
template <class T, ReduceOp Op, class Sources>
static inline LIGHTCC_HD T reduceElement(const Sources& srcs, int n, size_t i, double pre,
                                         double post) {
  using A = typename AccOf<T>::type;
  A acc = scaleUnlessOne(toAcc(static_cast<const T*>(srcs[0])[i]), pre);
  for (int j = 1; j < n; ++j) {
    acc = combineAs<Op>(acc, scaleUnlessOne(toAcc(static_cast<const T*>(srcs[j])[i]), pre));
  }
  return fromAcc<T>(scaleUnlessOne(acc, post));
}

}  // namespace lightcc::kernels
