// Host launcher for the CUDA twin of DGC's training arithmetic: momentum correction, plain and Nesterov.
#pragma once

#include <cstddef>

#include "common/dtype.h"
#include "common/status.h"

// As topk_cuda.h: in liblightcc_cuda.so, through the extern "C" table below; enqueues on
// `stream` and returns without waiting; device pointers. Arithmetic: kernels::dgcStep
// (csrc/kernels/topk_train.h), shared with the CPU's kernels::dgcAccumulate: same bits.

namespace lightcc::cuda {

// u = m*u + scale*g; v += u (or, Nesterov, scale*g + m*u), element-wise; grad in
// float32/float16/bfloat16 (kInvalidArgument otherwise).
Status dgcAccumulateCuda(float* u, float* v, const void* grad, DataType dtype, size_t count, float scale,
                         float momentum, bool nesterov, void* stream);

struct CudaTrainTableV1 {
  int version;  // 1
  Status (*dgcAccumulate)(float* u, float* v, const void* grad, DataType dtype, size_t count, float scale,
                          float momentum, bool nesterov, void* stream);
};

}  // namespace lightcc::cuda

extern "C" const lightcc::cuda::CudaTrainTableV1* lightccCudaTrainTableV1();
