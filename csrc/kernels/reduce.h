// CPU reduction and scaling kernels: the only place the engine touches element arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"

namespace lightcc::kernels {

// dst[i] = postscale * OP_{j=0..n-1}(prescale * srcs[j][i]) for i < count.
//
// - Sources are combined in index order 0..n-1, so every rank that reduces the same inputs in
//   the same order gets bit-identical output.
// - float16/bfloat16 accumulate in float32 and round once at the end (round-to-nearest-even).
// - op is kSum, kMin, kMax or kProduct; kAverage is reduced as kSum (the caller folds 1/size
//   into postscale). kAdasum is rejected by the engine before it gets here.
// - Scale factors of exactly 1.0 cost nothing. Integer types scale through double and
//   truncate toward zero; kBool behaves as uint8.
// - dst may alias any one source (in-place reduction); sources may not otherwise overlap dst.
// - n >= 1; n == 1 is a scaled copy.
void reduceN(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
             ReduceOp op, double prescale = 1.0, double postscale = 1.0);

// dst[i] = factor * src[i]; dst may equal src.
void scale(void* dst, const void* src, size_t count, DataType dtype, double factor);

// Which instruction set the dispatcher picked at load time ("avx512", "avx2", "generic"),
// for --check-build and benchmark reports.
const char* simdLevel();

}  // namespace lightcc::kernels

namespace lightcc::kernels {

// data[i] /= divisor for integer dtypes, truncating toward zero: an exact integer Average
// (scaling by 1/size through double would turn 9/3 into 2). No-op for floating types.
void divideIntegers(void* data, size_t count, DataType dtype, int64_t divisor);

}  // namespace lightcc::kernels
