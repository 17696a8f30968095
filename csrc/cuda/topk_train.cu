// CUDA twin of DGC's momentum correction (kernels::dgcAccumulate): one thread an element over kernels::dgcStep.
#include <cuda_runtime.h>

#include <string>

#include "cuda/topk_train_cuda.h"
#include "kernels/half.h"
#include "kernels/topk_train.h"

namespace lightcc::cuda {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;  // grid-stride beyond this

unsigned gridFor(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return unsigned(blocks < kMaxBlocks ? (blocks ? blocks : 1) : kMaxBlocks);
}

template <class S>
__global__ void dgcKernel(float* u, float* v, const S* g, size_t n, float scale, float m, bool nesterov) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float uu = u[i], vv = v[i];
    kernels::dgcStep(uu, vv, kernels::mulRn(scale, kernels::toFloat(g[i])), m, nesterov);
    u[i] = uu;
    v[i] = vv;
  }
}

}  // namespace

Status dgcAccumulateCuda(float* u, float* v, const void* grad, DataType dtype, size_t count, float scale,
                         float momentum, bool nesterov, void* stream) {
  if (count == 0) return Status::OK();
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DataType::kFloat32:
      dgcKernel<<<gridFor(count), kThreads, 0, s>>>(u, v, static_cast<const float*>(grad), count, scale, momentum,
                                                    nesterov);
      break;
    case DataType::kFloat16:
      dgcKernel<<<gridFor(count), kThreads, 0, s>>>(u, v, static_cast<const kernels::Half*>(grad), count, scale,
                                                    momentum, nesterov);
      break;
    case DataType::kBFloat16:
      dgcKernel<<<gridFor(count), kThreads, 0, s>>>(u, v, static_cast<const kernels::BFloat16*>(grad), count, scale,
                                                    momentum, nesterov);
      break;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      return Status::InvalidArgument(std::string("CUDA momentum correction takes float32, float16 or bfloat16, not ") +
                                     dtypeName(dtype));
  }
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return Status::OK();
  return Status::Internal(std::string("CUDA momentum correction launch failed: ") + cudaGetErrorString(err));
}

}  // namespace lightcc::cuda

extern "C" const lightcc::cuda::CudaTrainTableV1* lightccCudaTrainTableV1() {
  static const lightcc::cuda::CudaTrainTableV1 table = {1, lightcc::cuda::dgcAccumulateCuda};
  return &table;
}
