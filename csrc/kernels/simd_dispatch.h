// Internal: the per-instruction-set reduction kernels behind reduceN, for the dispatcher and tests.
#pragma once

#include <cstddef>

#include "common/dtype.h"

// For the per-element helpers of the kernel loops: GCC will not always inline a 60-instruction
// conversion on its own, and a call per vector costs more than the conversion.
#define LIGHTCC_KERNEL_INLINE inline __attribute__((always_inline))

namespace lightcc::kernels {

enum class SimdLevel : int { kGeneric = 0, kAvx2 = 1, kAvx512 = 2 };

// One instruction set's reduceN, with op already normalised to kSum/kMin/kMax/kProduct (or, for
// integer dtypes, a bitwise op) and, for integer dtypes, pre == post == 1 (scaled integers take reduceScaledInt).
using ReduceFn = void (*)(void* dst, const void* const* srcs, int n, size_t count,
                          DataType dtype, ReduceOp op, double prescale, double postscale);

void reduceGeneric(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                   ReduceOp op, double prescale, double postscale);
void reduceAvx2(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                ReduceOp op, double prescale, double postscale);
void reduceAvx512(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                  ReduceOp op, double prescale, double postscale);

// Integer dtypes with a scale factor other than 1: a scalar loop through double (rare: integer
// averages), same contract as reduceN.
void reduceScaledInt(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                     ReduceOp op, double prescale, double postscale);

const char* simdLevelName(SimdLevel level);

// Prints "lightcc: internal error: a kernel was called with <what> <value>" and aborts: reduceN
// and the top-k kernel tables return nothing, so a caller breaking their contract (Adasum, a
// bitwise op on floats, a dtype the caller should have refused, n < 1) is a bug in lightcc that
// would otherwise produce garbage silently. The kernels call it for the enum cases their
// dispatchers have already refused.
[[noreturn]] void contractViolation(const char* what, int value);

// True when this build contains the level and this CPU can run it.
bool simdLevelSupported(SimdLevel level);

// The best supported level, found once (CPUID) on first use.
SimdLevel bestSimdLevel();

// reduceN forced onto one level (must be supported): how tests reach the generic path.
void reduceNAt(SimdLevel level, void* dst, const void* const* srcs, int n, size_t count,
               DataType dtype, ReduceOp op, double prescale, double postscale);

}  // namespace lightcc::kernels
