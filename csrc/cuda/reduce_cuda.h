// Host launchers for the CUDA reduction kernels: reduce.h's contract, on device memory.
#pragma once

#include <cstddef>

#include "common/dtype.h"
#include "common/status.h"

// These live in liblightcc_cuda.so (cmake/cuda.cmake), which links the CUDA runtime statically;
// the Python module must not link it, so it dlopens the library and looks up the one extern "C"
// symbol below. No header here includes a CUDA header: streams travel as void*.

namespace lightcc::cuda {

// Source pointers travel inside the kernel's parameters, so their number is bounded.
constexpr int kMaxCudaSources = 64;

// Enqueues dst[i] = postscale * OP_j(prescale * srcs[j][i]) on `stream` (a cudaStream_t;
// nullptr = the legacy default stream) and returns without waiting. srcs is a host array of n
// device pointers. Semantics match kernels::reduceN bit for bit (same reduce_ops.h/half.h):
// source order 0..n-1, float16/bfloat16 accumulate in float and round once, NaN-propagating
// Min/Max, integer wrap-around and saturating integer scaling. dst may alias one source.
// Band/Bor/Bxor act on the bits of integer and bool elements.
// Errors: kInvalidArgument for n outside 1..kMaxCudaSources, Adasum, a bitwise op on a floating
// dtype or an unknown dtype;
// kInternal when the launch fails (message from cudaGetErrorString).
Status reduceNCuda(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                   ReduceOp op, double prescale, double postscale, void* stream);

// dst[i] = factor * src[i] on device memory; dst may equal src.
Status scaleCuda(void* dst, const void* src, size_t count, DataType dtype, double factor,
                 void* stream);

// What dlopen users look up: bump the version when a signature changes.
struct CudaKernelTableV1 {
  int version;  // 1
  Status (*reduceN)(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                    ReduceOp op, double prescale, double postscale, void* stream);
  Status (*scale)(void* dst, const void* src, size_t count, DataType dtype, double factor,
                  void* stream);
};

}  // namespace lightcc::cuda

extern "C" const lightcc::cuda::CudaKernelTableV1* lightccCudaKernelTableV1();
