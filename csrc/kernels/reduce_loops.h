// The reduction loops, written once over GCC vector types and compiled once per instruction set.
//
// Include only from a reduce_<isa>.cc, which first defines LIGHTCC_KERNEL_ISA (a namespace name
// unique to that file) and, in lightcc::kernels::LIGHTCC_KERNEL_ISA, a struct Isa with
//   kVecBytes                      vector width in bytes (16 or 32)
//   FloatVec                       float vector of that width
//   loadHalf(const Half*)          kVecBytes/4 halves -> FloatVec
//   storeHalf(Half*, FloatVec)     FloatVec -> halves, round to nearest even
// Everything here lives in that per-ISA namespace (or is static), so no out-of-line copy built
// with AVX-512 can be shared with the generic path by the linker. For the same reason these files
// call no std:: function: only type traits. Vector lane types live in reduce_lanes.h.
//
// Shape of one reduction (see reduce.h for the contract):
//   n <= 4   one fused pass: each output vector reads all sources, combines in order 0..n-1 and
//            is stored once; reads happen before the store, so dst may alias any source.
//   n > 4    per block of kBlockBytes: sources 0..3 -> an L1-resident accumulator, then one
//            source per pass, the last pass writing dst. dst is written only after every source
//            of that block was read, so aliasing still holds; float16/bfloat16 stay in float in
//            the accumulator and round once.
// Tails shorter than one vector run the same vector code on zero-padded copies, so the last
// elements get bit-identical arithmetic to the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/dtype.h"
#include "kernels/half.h"
#include "kernels/reduce_lanes.h"
#include "kernels/reduce_ops.h"
#include "kernels/simd_dispatch.h"

namespace lightcc::kernels::LIGHTCC_KERNEL_ISA {

// One pass over `count` elements combining N inputs: `first` (storage S, or an accumulator
// already prescaled when kFirstAcc) then rest[0..N-2] (storage S). The result goes to `out` as
// an accumulator (kOutAcc, not postscaled) or as storage S (postscaled when kScaled).
template <class S, ReduceOp Op, int N, bool kFirstAcc, bool kOutAcc, bool kScaled>
struct Pass {
  using L = Lane<S>;
  using A = typename L::Acc;
  using V = typename L::V;
  using In0 = std::conditional_t<kFirstAcc, A, S>;
  using Out = std::conditional_t<kOutAcc, A, S>;
  static constexpr int kLanes = L::kLanes;
  static constexpr int kRest = N > 1 ? N - 1 : 1;  // array size; only N-1 entries are used

  static LIGHTCC_KERNEL_INLINE void step(const In0* first, const S* const* rest, Out* out,
                                         size_t i, const V& pre, const V& post) {
    V acc;
    if constexpr (kFirstAcc) {
      acc = loadVec<V>(first + i);
    } else {
      acc = L::load(first + i);
      if constexpr (kScaled) acc = mul(acc, pre);
    }
#pragma GCC unroll 8
    for (int j = 0; j < N - 1; ++j) {
      V x = L::load(rest[j] + i);
      if constexpr (kScaled) x = mul(x, pre);
      acc = apply<Op>(acc, x);
    }
    if constexpr (kOutAcc) {
      storeVec(out + i, acc);
    } else {
      if constexpr (kScaled) acc = mul(acc, post);
      L::store(out + i, acc);
    }
  }

  static void run(void* out, const void* first, const S* const* rest, size_t count, A pre,
                  A post) {
    const In0* f = static_cast<const In0*>(first);
    Out* o = static_cast<Out*>(out);
    const S* r[kRest] = {};
    for (int j = 0; j < N - 1; ++j) r[j] = rest[j];
    V vpre = splat<V>(pre);
    V vpost = splat<V>(post);
    size_t i = 0;
    for (; i + kLanes <= count; i += kLanes) step(f, r, o, i, vpre, vpost);
    if (i == count) return;
    // The tail goes once more through this loop on zero-padded copies: identical arithmetic,
    // and no second inlined copy of step().
    // An accumulator is read and written as whole vectors (its buffer has a vector of slack):
    // for bfloat16 the lanes inside one are permuted, so a prefix is not the first elements.
    size_t left = count - i;
    size_t firstLeft = kFirstAcc ? kLanes : left;
    size_t outLeft = kOutAcc ? kLanes : left;
    In0 tailFirst[kLanes] = {};
    S tailRest[kRest][kLanes] = {};
    Out tailOut[kLanes];
    const S* tailPtrs[kRest] = {};
    __builtin_memcpy(tailFirst, f + i, firstLeft * sizeof(In0));
    for (int j = 0; j < N - 1; ++j) {
      __builtin_memcpy(tailRest[j], r[j] + i, left * sizeof(S));
      tailPtrs[j] = tailRest[j];
    }
    run(tailOut, tailFirst, tailPtrs, kLanes, pre, post);
    __builtin_memcpy(o + i, tailOut, outLeft * sizeof(Out));
  }
};

constexpr size_t kBlockBytes = 16384;  // accumulator block: stays in L1 with room for inputs

// n > 4 sources, blocked through an accumulator (see the file comment).
template <class S, ReduceOp Op, bool kScaled>
static void reduceMany(void* dst, const void* const* srcs, int n, size_t count,
                       typename Lane<S>::Acc pre, typename Lane<S>::Acc post) {
  using A = typename Lane<S>::Acc;
  constexpr size_t kBlock = kBlockBytes / sizeof(A);
  alignas(64) A acc[kBlock + Lane<S>::kLanes];  // slack: see the tail in Pass::run
  S* d = static_cast<S*>(dst);
  for (size_t off = 0; off < count; off += kBlock) {
    size_t len = count - off < kBlock ? count - off : kBlock;
    const S* g[3];
    for (int j = 0; j < 3; ++j) g[j] = static_cast<const S*>(srcs[1 + j]) + off;
    Pass<S, Op, 4, false, true, kScaled>::run(acc, static_cast<const S*>(srcs[0]) + off, g, len,
                                              pre, post);
    // Then one source at a time: the accumulator pass runs from L1, so this costs little over
    // wider groups and keeps the number of instantiated loops down.
    for (int j = 4; j < n - 1; ++j) {
      g[0] = static_cast<const S*>(srcs[j]) + off;
      Pass<S, Op, 2, true, true, kScaled>::run(acc, acc, g, len, pre, post);
    }
    g[0] = static_cast<const S*>(srcs[n - 1]) + off;
    Pass<S, Op, 2, true, false, kScaled>::run(d + off, acc, g, len, pre, post);
  }
}

template <class S, ReduceOp Op, bool kScaled>
static void reduceTyped(void* dst, const void* const* srcs, int n, size_t count, double pre,
                        double post) {
  using A = typename Lane<S>::Acc;
  A p = kScaled ? A(pre) : A(1);
  A q = kScaled ? A(post) : A(1);
  const S* rest[3] = {};
  for (int j = 1; j < n && j < 4; ++j) rest[j - 1] = static_cast<const S*>(srcs[j]);
  switch (n) {
    case 1:  // a scaled copy: the op never applies, so share one instantiation
      return Pass<S, ReduceOp::kSum, 1, false, false, kScaled>::run(dst, srcs[0], rest, count, p,
                                                                    q);
    case 2: return Pass<S, Op, 2, false, false, kScaled>::run(dst, srcs[0], rest, count, p, q);
    case 3: return Pass<S, Op, 3, false, false, kScaled>::run(dst, srcs[0], rest, count, p, q);
    case 4: return Pass<S, Op, 4, false, false, kScaled>::run(dst, srcs[0], rest, count, p, q);
    default: return reduceMany<S, Op, kScaled>(dst, srcs, n, count, p, q);
  }
}

// Floating types: every element-wise arithmetic op, scaled or not. The ops dispatch.cc has
// already turned into another (Average) or refused (Adasum, bitwise ops) stop here.
template <class S>
static void reduceFloat(void* dst, const void* const* srcs, int n, size_t count, ReduceOp op,
                        double pre, double post) {
  bool scaled = pre != 1.0 || post != 1.0;
#define LIGHTCC_FLOAT_CASE(OP)                                                   \
  case ReduceOp::OP:                                                             \
    if (scaled) return reduceTyped<S, ReduceOp::OP, true>(dst, srcs, n, count, pre, post); \
    return reduceTyped<S, ReduceOp::OP, false>(dst, srcs, n, count, pre, post);
  switch (op) {
    LIGHTCC_FLOAT_CASE(kSum)
    LIGHTCC_FLOAT_CASE(kMin)
    LIGHTCC_FLOAT_CASE(kMax)
    LIGHTCC_FLOAT_CASE(kProduct)
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum:
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      contractViolation("floating-point kernel op", int(op));
  }
#undef LIGHTCC_FLOAT_CASE
}

// Integer types, unscaled only (the dispatcher sends scaled integers to the scalar path).
// Sum, Product and the bitwise ops run on the unsigned type U: two's complement gives the same
// bits and unsigned vector arithmetic wraps by definition. Min and Max need the signed type I.
template <class U, class I>
static void reduceInt(void* dst, const void* const* srcs, int n, size_t count, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return reduceTyped<U, ReduceOp::kSum, false>(dst, srcs, n, count, 1, 1);
    case ReduceOp::kMin: return reduceTyped<I, ReduceOp::kMin, false>(dst, srcs, n, count, 1, 1);
    case ReduceOp::kMax: return reduceTyped<I, ReduceOp::kMax, false>(dst, srcs, n, count, 1, 1);
    case ReduceOp::kProduct:
      return reduceTyped<U, ReduceOp::kProduct, false>(dst, srcs, n, count, 1, 1);
    case ReduceOp::kBand: return reduceTyped<U, ReduceOp::kBand, false>(dst, srcs, n, count, 1, 1);
    case ReduceOp::kBor: return reduceTyped<U, ReduceOp::kBor, false>(dst, srcs, n, count, 1, 1);
    case ReduceOp::kBxor: return reduceTyped<U, ReduceOp::kBxor, false>(dst, srcs, n, count, 1, 1);
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum:
      contractViolation("integer kernel op", int(op));
  }
}

// Entry point for this instruction set. op is already element-wise (dispatch.cc).
static void reduceAll(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                      ReduceOp op, double pre, double post) {
  switch (dtype) {
    case DataType::kFloat32: return reduceFloat<float>(dst, srcs, n, count, op, pre, post);
    case DataType::kFloat64: return reduceFloat<double>(dst, srcs, n, count, op, pre, post);
    case DataType::kFloat16: return reduceFloat<Half>(dst, srcs, n, count, op, pre, post);
    case DataType::kBFloat16: return reduceFloat<BFloat16>(dst, srcs, n, count, op, pre, post);
    case DataType::kUInt8:
    case DataType::kBool: return reduceInt<uint8_t, uint8_t>(dst, srcs, n, count, op);
    case DataType::kInt8: return reduceInt<uint8_t, int8_t>(dst, srcs, n, count, op);
    case DataType::kUInt16: return reduceInt<uint16_t, uint16_t>(dst, srcs, n, count, op);
    case DataType::kInt16: return reduceInt<uint16_t, int16_t>(dst, srcs, n, count, op);
    case DataType::kInt32: return reduceInt<uint32_t, int32_t>(dst, srcs, n, count, op);
    case DataType::kInt64: return reduceInt<uint64_t, int64_t>(dst, srcs, n, count, op);
  }
}

}  // namespace lightcc::kernels::LIGHTCC_KERNEL_ISA
