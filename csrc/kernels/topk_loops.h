// The top-k streaming loops (threshold filter, residual, momentum), built once per instruction set.
//
// Include only from a topk_<isa>.cc, which first defines LIGHTCC_TOPK_ISA (a namespace name
// unique to that file) and, in lightcc::kernels::LIGHTCC_TOPK_ISA, a struct Isa with
//   kVecBytes                    vector width in bytes (16 or 32)
//   loadHalf(const Half*)        kVecBytes/4 halves -> float vector (exact)
//   movemask(I32 vector)         lane i's top bit -> bit i
// As in reduce_loops.h, everything lives in that per-ISA namespace (or is static) and calls no
// std:: function, so the linker can never hand the generic path a copy built with AVX-512.
//
// Arithmetic comes from topk_ops.h; tails run the same scalar functions, which give the same
// bits as the vector lanes (no FMA anywhere), so every set's results are identical.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "kernels/half.h"
#include "kernels/simd_dispatch.h"
#include "kernels/topk_detail.h"
#include "kernels/topk_ops.h"

namespace lightcc::kernels::LIGHTCC_TOPK_ISA {

constexpr int kLanes = Isa::kVecBytes / 4;
typedef float F32 __attribute__((vector_size(Isa::kVecBytes)));
typedef int32_t I32 __attribute__((vector_size(Isa::kVecBytes)));
typedef uint32_t U32 __attribute__((vector_size(Isa::kVecBytes)));
typedef uint16_t U16 __attribute__((vector_size(Isa::kVecBytes / 2)));

// Element loads as float (exact for every input type) and as magnitude keys.
static LIGHTCC_KERNEL_INLINE F32 loadFloat(const float* p) {
  F32 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
static LIGHTCC_KERNEL_INLINE F32 loadFloat(const Half* p) { return F32(Isa::loadHalf(p)); }
static LIGHTCC_KERNEL_INLINE F32 loadFloat(const BFloat16* p) {
  U16 raw;
  __builtin_memcpy(&raw, p, sizeof raw);
  return F32(__builtin_convertvector(raw, U32) << 16);
}
template <class S>
static LIGHTCC_KERNEL_INLINE I32 loadKeys(const S* p) {
  return I32(U32(loadFloat(p)) & kMaxKey);
}

static LIGHTCC_KERNEL_INLINE uint32_t rawBits(float v) { return floatBits(v); }
static LIGHTCC_KERNEL_INLINE uint32_t rawBits(Half v) { return v.bits; }
static LIGHTCC_KERNEL_INLINE uint32_t rawBits(BFloat16 v) { return v.bits; }

// Blocks of 32 entries: one 32-bit mask per block, and the rare survivors come out of it with
// count-trailing-zeros, so a block without survivors costs loads, compares and one branch.
constexpr int kBlock = 32;

template <class S>
static size_t filterTyped(const S* v, size_t count, uint32_t lo, uint32_t hi, size_t cap,
                          uint32_t* idx, uint32_t* raw) {
  const I32 vlo = I32{} + int32_t(lo), vhi = I32{} + int32_t(hi);
  size_t n = 0;
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    uint32_t mask = 0;
#pragma GCC unroll 8
    for (int j = 0; j < kBlock / kLanes; ++j) {
      I32 keys = loadKeys(v + i + j * kLanes);
      mask |= Isa::movemask(keyInRange(keys, vlo, vhi)) << (j * kLanes);
    }
    while (mask != 0) {
      if (n == cap) return cap + 1;
      size_t at = i + size_t(__builtin_ctz(mask));
      mask &= mask - 1;
      idx[n] = uint32_t(at);
      raw[n] = rawBits(v[at]);
      ++n;
    }
  }
  for (; i < count; ++i) {
    if (keyInRange(magnitudeKey(v[i]), lo, hi)) {
      if (n == cap) return cap + 1;
      idx[n] = uint32_t(i);
      raw[n] = rawBits(v[i]);
      ++n;
    }
  }
  return n;
}

template <class S>
static void residualTyped(float* r, const S* g, size_t count, float scale) {
  const F32 vscale = F32{} + scale;
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    F32 acc = loadFloat(r + i);
    acc = residualStep(acc, loadFloat(g + i), vscale);
    __builtin_memcpy(r + i, &acc, sizeof acc);
  }
  for (; i < count; ++i) r[i] = residualStep(r[i], toFloat(g[i]), scale);
}

template <class S>
static void momentumTyped(float* u, float* v, const S* g, size_t count, float m) {
  const F32 vm = F32{} + m;
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    F32 uu = loadFloat(u + i), vv = loadFloat(v + i);
    momentumStep(uu, vv, loadFloat(g + i), vm);
    __builtin_memcpy(u + i, &uu, sizeof uu);
    __builtin_memcpy(v + i, &vv, sizeof vv);
  }
  for (; i < count; ++i) momentumStep(u[i], v[i], toFloat(g[i]), m);
}

// The type-erased entry points of the table (dtype already checked by the caller).
static size_t filter(const void* values, DataType dtype, size_t count, uint32_t lo, uint32_t hi,
                     size_t cap, uint32_t* idx, uint32_t* raw) {
  switch (dtype) {
    case DataType::kFloat16:
      return filterTyped(static_cast<const Half*>(values), count, lo, hi, cap, idx, raw);
    case DataType::kBFloat16:
      return filterTyped(static_cast<const BFloat16*>(values), count, lo, hi, cap, idx, raw);
    case DataType::kFloat32:
      return filterTyped(static_cast<const float*>(values), count, lo, hi, cap, idx, raw);
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      break;
  }
  contractViolation("top-k filter dtype", int(dtype));
}

static void residual(float* r, const void* g, DataType dtype, size_t count, float scale) {
  switch (dtype) {
    case DataType::kFloat16:
      return residualTyped(r, static_cast<const Half*>(g), count, scale);
    case DataType::kBFloat16:
      return residualTyped(r, static_cast<const BFloat16*>(g), count, scale);
    case DataType::kFloat32: return residualTyped(r, static_cast<const float*>(g), count, scale);
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      contractViolation("top-k residual dtype", int(dtype));
  }
}

static void momentum(float* u, float* v, const void* g, DataType dtype, size_t count, float m) {
  switch (dtype) {
    case DataType::kFloat16:
      return momentumTyped(u, v, static_cast<const Half*>(g), count, m);
    case DataType::kBFloat16:
      return momentumTyped(u, v, static_cast<const BFloat16*>(g), count, m);
    case DataType::kFloat32: return momentumTyped(u, v, static_cast<const float*>(g), count, m);
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      contractViolation("top-k momentum dtype", int(dtype));
  }
}

}  // namespace lightcc::kernels::LIGHTCC_TOPK_ISA
