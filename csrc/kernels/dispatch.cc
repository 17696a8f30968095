// Picks the reduction kernels for this CPU once, and implements reduceN, scale and simdLevel.
#include <cstdio>
#include <cstdlib>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "kernels/reduce.h"
#include "kernels/simd_dispatch.h"

namespace lightcc::kernels {

void contractViolation(const char* what, int value) {
  std::fprintf(stderr, "lightcc: internal error: a kernel was called with %s %d\n", what, value);
  std::abort();
}

namespace {

// The generic kernels are always built; the x86 ones only on x86-64 (see cmake/kernels.cmake),
// hence the one compile-time switch of the kernel layer.
ReduceFn kernelFor(SimdLevel level) {
#if defined(__x86_64__)
  if (level == SimdLevel::kAvx512) return reduceAvx512;
  if (level == SimdLevel::kAvx2) return reduceAvx2;
#endif
  return level == SimdLevel::kGeneric ? reduceGeneric : nullptr;
}

#if defined(__x86_64__)
// CPUID and XGETBV directly rather than __builtin_cpu_supports: with clang the builtin reads
// compiler-rt's __cpu_model, which lld cannot reach from a shared module when the wheel is built
// with zig's toolchain (packaging/build_wheel.sh). The OS must also save the wide registers.
struct CpuBits {
  bool avx2 = false, avx512 = false;
};

CpuBits probeCpu() {
  CpuBits bits;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return bits;
  const bool f16c = c & (1u << 29), osxsave = c & (1u << 27);
  if (!osxsave || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return bits;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const bool ymm = (lo & 0x6u) == 0x6u, zmm = (lo & 0xE6u) == 0xE6u;
  bits.avx2 = ymm && f16c && (b & (1u << 5));
  const unsigned avx512 = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);  // F, DQ, BW, VL
  bits.avx512 = bits.avx2 && zmm && (b & avx512) == avx512;
  return bits;
}
#endif

bool cpuRuns(SimdLevel level) {
#if defined(__x86_64__)
  static const CpuBits bits = probeCpu();
  if (level == SimdLevel::kAvx2) return bits.avx2;
  if (level == SimdLevel::kAvx512) return bits.avx512;
#endif
  return level == SimdLevel::kGeneric;
}

SimdLevel detectBest() {
  for (SimdLevel level : {SimdLevel::kAvx512, SimdLevel::kAvx2}) {
    if (simdLevelSupported(level)) return level;
  }
  return SimdLevel::kGeneric;
}

}  // namespace

const char* simdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512: return "avx512";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kGeneric: return "generic";
  }
  return "unknown";
}

bool simdLevelSupported(SimdLevel level) {
  return kernelFor(level) != nullptr && cpuRuns(level);
}

SimdLevel bestSimdLevel() {
  static const SimdLevel best = detectBest();  // thread-safe, immutable once set
  return best;
}

namespace {

// The op a kernel applies: Average reduces as Sum (the caller folded 1/size into postscale);
// Adasum, and bitwise ops on floats, break reduceN's contract.
ReduceOp elementWiseOp(ReduceOp op, DataType dtype) {
  switch (op) {
    case ReduceOp::kAverage: return ReduceOp::kSum;
    case ReduceOp::kSum:
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kProduct: return op;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      if (isFloatType(dtype)) contractViolation("a bitwise op on a floating dtype, op", int(op));
      return op;
    case ReduceOp::kAdasum: break;
  }
  contractViolation("op", int(op));
}

// Checks the contract and routes scaled integers; fn is the kernel of a supported level.
void reduceWith(ReduceFn fn, void* dst, const void* const* srcs, int n, size_t count,
                DataType dtype, ReduceOp op, double prescale, double postscale) {
  if (n < 1) contractViolation("n", n);
  if (!isValidDataType(static_cast<int>(dtype))) contractViolation("dtype", int(dtype));
  op = elementWiseOp(op, dtype);
  if (count == 0) return;
  if (!isFloatType(dtype) && (prescale != 1.0 || postscale != 1.0)) {
    return reduceScaledInt(dst, srcs, n, count, dtype, op, prescale, postscale);
  }
  fn(dst, srcs, n, count, dtype, op, prescale, postscale);
}

}  // namespace

void reduceNAt(SimdLevel level, void* dst, const void* const* srcs, int n, size_t count,
               DataType dtype, ReduceOp op, double prescale, double postscale) {
  if (!simdLevelSupported(level)) contractViolation("unsupported simd level", int(level));
  reduceWith(kernelFor(level), dst, srcs, n, count, dtype, op, prescale, postscale);
}

void reduceN(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
             ReduceOp op, double prescale, double postscale) {
  static const ReduceFn best = kernelFor(bestSimdLevel());  // CPUID once, not per call
  reduceWith(best, dst, srcs, n, count, dtype, op, prescale, postscale);
}

void scale(void* dst, const void* src, size_t count, DataType dtype, double factor) {
  if (factor == 1.0 && dst == src) return;
  const void* srcs[1] = {src};
  reduceN(dst, srcs, 1, count, dtype, ReduceOp::kSum, factor, 1.0);
}

const char* simdLevel() { return simdLevelName(bestSimdLevel()); }

}  // namespace lightcc::kernels
