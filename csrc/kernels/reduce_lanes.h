// Vector lane types: how each storage dtype loads into and stores from SIMD vectors.
//
// Part of reduce_loops.h (include that, not this): the same per-ISA namespace and Isa contract
// apply. Lane<S> gives, for storage type S: Acc (the accumulation scalar), V (its vector, or
// FloatPair for bfloat16), kLanes (elements per V) and load/store between S* and V.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/half.h"
#include "kernels/reduce_ops.h"
#include "kernels/simd_dispatch.h"

namespace lightcc::kernels::LIGHTCC_KERNEL_ISA {

template <class T, int kBytes> struct VecType {
  typedef T type __attribute__((vector_size(kBytes)));
};
template <class T> using VecOf = typename VecType<T, Isa::kVecBytes>::type;

// How one storage type S is loaded into / stored from vectors of its accumulation type.
template <class S> struct Lane {
  using Acc = S;
  using V = VecOf<S>;
  static constexpr int kLanes = Isa::kVecBytes / int(sizeof(S));
  static LIGHTCC_KERNEL_INLINE V load(const S* p) {
    V v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static LIGHTCC_KERNEL_INLINE void store(S* p, V v) { __builtin_memcpy(p, &v, sizeof v); }
};

template <> struct Lane<Half> {
  using Acc = float;
  using V = VecOf<float>;
  static constexpr int kLanes = Isa::kVecBytes / 4;
  static LIGHTCC_KERNEL_INLINE V load(const Half* p) { return V(Isa::loadHalf(p)); }
  static LIGHTCC_KERNEL_INLINE void store(Half* p, V v) {
    Isa::storeHalf(p, typename Isa::FloatVec(v));
  }
};

// Two float vectors handled as one: bfloat16's lane type below. A struct rather than a vector
// of twice the width, which GCC would put in one 512-bit register where AVX-512 is enabled.
struct FloatPair {
  VecOf<float> lo, hi;
};

// Element-wise helpers over plain vectors and FloatPair, for Pass::step.
template <class V, class A> static LIGHTCC_KERNEL_INLINE V splat(A x) {
  if constexpr (std::is_same_v<V, FloatPair>) {
    return {VecOf<float>{} + x, VecOf<float>{} + x};
  } else {
    return V{} + x;
  }
}
template <class V> static LIGHTCC_KERNEL_INLINE V mul(V a, V b) { return a * b; }
static LIGHTCC_KERNEL_INLINE FloatPair mul(FloatPair a, FloatPair b) {
  return {a.lo * b.lo, a.hi * b.hi};
}
template <ReduceOp Op, class V> static LIGHTCC_KERNEL_INLINE V apply(V a, V b) {
  return combineAs<Op>(a, b);
}
template <ReduceOp Op> static LIGHTCC_KERNEL_INLINE FloatPair apply(FloatPair a, FloatPair b) {
  return {combineAs<Op>(a.lo, b.lo), combineAs<Op>(a.hi, b.hi)};
}

// bfloat16 is the top half of a float: widening is a 16-bit shift, narrowing a rounding add and
// a shift. Zero-extending 16-bit lanes into 32-bit ones would cost lane shuffles (or slow
// narrowing moves), so the lanes are permuted instead: a 32-bit word holding two bf16 values
// gives its even one by `<< 16` and its odd one by masking the low half. V holds the evens
// (lo) and the odds (hi). Every load, store and accumulator access uses the same permutation,
// so element-wise arithmetic is unaffected, and the store undoes it with shifts and an or.
template <> struct Lane<BFloat16> {
  using Acc = float;
  using V = FloatPair;
  using U32 = VecOf<uint32_t>;
  static constexpr int kLanes = Isa::kVecBytes / 2;

  static LIGHTCC_KERNEL_INLINE V load(const BFloat16* p) {
    U32 raw;
    __builtin_memcpy(&raw, p, sizeof raw);
    return {VecOf<float>(raw << 16), VecOf<float>(raw & 0xffff0000u)};
  }

  // Round to nearest even per lane, as floatToBf16 in half.h: NaN -> quiet NaN, payload kept.
  static LIGHTCC_KERNEL_INLINE U32 round(VecOf<float> v) {
    U32 x = U32(v);
    U32 f = x & 0x7fffffffu;
    return (f > 0x7f800000u) ? (x | 0x400000u) : (x + 0x7fffu + ((x >> 16) & 1u));
  }

  static LIGHTCC_KERNEL_INLINE void store(BFloat16* p, V v) {
    U32 out = (round(v.lo) >> 16) | (round(v.hi) & 0xffff0000u);
    __builtin_memcpy(p, &out, sizeof out);
  }
};

// Accumulator vectors are stored as they are (for bfloat16: in the permuted order above).
template <class V, class A> static LIGHTCC_KERNEL_INLINE V loadVec(const A* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <class V, class A> static LIGHTCC_KERNEL_INLINE void storeVec(A* p, V v) {
  __builtin_memcpy(p, &v, sizeof v);
}

}  // namespace lightcc::kernels::LIGHTCC_KERNEL_ISA
