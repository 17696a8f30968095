// CUDA kernels for reduceN and scale on device memory, sharing reduce_ops.h and half.h with CPU.
#include <cuda_runtime.h>

#include <string>
#include <type_traits>

#include "cuda/reduce_cuda.h"
#include "kernels/half.h"
#include "kernels/reduce_ops.h"

namespace lightcc::cuda {
namespace {

using kernels::BFloat16;
using kernels::Half;

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;  // grid-stride beyond this: enough to fill any current GPU

struct SourceList {
  const void* p[kMaxCudaSources];
  __device__ const void* operator[](int j) const { return p[j]; }
};

// One thread per element (grid-stride); the element itself is reduce_ops.h's reduceElement,
// which reads every source before the single write, so dst == srcs[k] is safe.
template <class T, ReduceOp Op>
__global__ void reduceKernel(T* dst, SourceList srcs, int n, size_t count, double pre,
                             double post) {
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    dst[i] = kernels::reduceElement<T, Op>(srcs, n, i, pre, post);
  }
}

template <class T, ReduceOp Op>
void launch(void* dst, const SourceList& srcs, int n, size_t count, double pre, double post,
            cudaStream_t stream) {
  size_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > size_t(kMaxBlocks)) blocks = kMaxBlocks;
  reduceKernel<T, Op><<<unsigned(blocks), kThreads, 0, stream>>>(static_cast<T*>(dst), srcs, n,
                                                                  count, pre, post);
}

// Bitwise ops exist for integer element types only; reduceNCuda refuses them on floats before
// this point, so the float instantiations below are never reached.
template <class T, ReduceOp Op>
void launchBitwise(void* dst, const SourceList& srcs, int n, size_t count, double pre, double post,
                   cudaStream_t stream) {
  if constexpr (std::is_integral_v<T>) launch<T, Op>(dst, srcs, n, count, pre, post, stream);
}

template <class T>
void launchForOp(void* dst, const SourceList& srcs, int n, size_t count, ReduceOp op,
                 double pre, double post, cudaStream_t stream) {
  switch (op) {
    case ReduceOp::kSum: return launch<T, ReduceOp::kSum>(dst, srcs, n, count, pre, post, stream);
    case ReduceOp::kMin: return launch<T, ReduceOp::kMin>(dst, srcs, n, count, pre, post, stream);
    case ReduceOp::kMax: return launch<T, ReduceOp::kMax>(dst, srcs, n, count, pre, post, stream);
    case ReduceOp::kProduct:
      return launch<T, ReduceOp::kProduct>(dst, srcs, n, count, pre, post, stream);
    case ReduceOp::kBand:
      return launchBitwise<T, ReduceOp::kBand>(dst, srcs, n, count, pre, post, stream);
    case ReduceOp::kBor:
      return launchBitwise<T, ReduceOp::kBor>(dst, srcs, n, count, pre, post, stream);
    case ReduceOp::kBxor:
      return launchBitwise<T, ReduceOp::kBxor>(dst, srcs, n, count, pre, post, stream);
    case ReduceOp::kAverage:  // reduceNCuda turned these into kSum or refused them
    case ReduceOp::kAdasum:
      return;
  }
}

// The op the kernel applies, or why there is none: Average reduces as Sum (the caller folded
// 1/size into postscale); Adasum is not element-wise; bitwise ops need integer or bool elements.
Status elementWiseOp(DataType dtype, ReduceOp* op) {
  switch (*op) {
    case ReduceOp::kAverage: *op = ReduceOp::kSum; return Status::OK();
    case ReduceOp::kSum:
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kProduct: return Status::OK();
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      if (!isFloatType(dtype)) return Status::OK();
      return Status::InvalidArgument(std::string("CUDA reduce: ") + reduceOpName(*op) +
                                     " needs integer or bool elements, not " + dtypeName(dtype));
    case ReduceOp::kAdasum: break;
  }
  return Status::InvalidArgument(std::string("CUDA reduce: op ") + reduceOpName(*op) +
                                 " is not an element-wise reduction");
}

}  // namespace

Status reduceNCuda(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                   ReduceOp op, double prescale, double postscale, void* stream) {
  if (n < 1 || n > kMaxCudaSources) {
    return Status::InvalidArgument("CUDA reduce: " + std::to_string(n) + " sources, expected 1.." +
                                   std::to_string(kMaxCudaSources));
  }
  if (!isValidDataType(int(dtype))) {
    return Status::InvalidArgument("CUDA reduce: unknown dtype code " + std::to_string(int(dtype)));
  }
  LIGHTCC_RETURN_IF_ERROR(elementWiseOp(dtype, &op));
  if (count == 0) return Status::OK();
  SourceList list{};
  for (int j = 0; j < n; ++j) list.p[j] = srcs[j];
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  double pre = prescale, post = postscale;
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kBool: launchForOp<uint8_t>(dst, list, n, count, op, pre, post, s); break;
    case DataType::kInt8: launchForOp<int8_t>(dst, list, n, count, op, pre, post, s); break;
    case DataType::kUInt16: launchForOp<uint16_t>(dst, list, n, count, op, pre, post, s); break;
    case DataType::kInt16: launchForOp<int16_t>(dst, list, n, count, op, pre, post, s); break;
    case DataType::kInt32: launchForOp<int32_t>(dst, list, n, count, op, pre, post, s); break;
    case DataType::kInt64: launchForOp<int64_t>(dst, list, n, count, op, pre, post, s); break;
    case DataType::kFloat16: launchForOp<Half>(dst, list, n, count, op, pre, post, s); break;
    case DataType::kBFloat16: launchForOp<BFloat16>(dst, list, n, count, op, pre, post, s); break;
    case DataType::kFloat32: launchForOp<float>(dst, list, n, count, op, pre, post, s); break;
    case DataType::kFloat64: launchForOp<double>(dst, list, n, count, op, pre, post, s); break;
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return Status::Internal(std::string("CUDA reduce launch (") + dtypeName(dtype) + ", " +
                            std::to_string(count) + " elements, " + std::to_string(n) +
                            " sources) failed: " + cudaGetErrorString(err));
  }
  return Status::OK();
}

Status scaleCuda(void* dst, const void* src, size_t count, DataType dtype, double factor,
                 void* stream) {
  const void* srcs[1] = {src};
  return reduceNCuda(dst, srcs, 1, count, dtype, ReduceOp::kSum, factor, 1.0, stream)
      .withContext("CUDA scale");
}

}  // namespace lightcc::cuda

extern "C" const lightcc::cuda::CudaKernelTableV1* lightccCudaKernelTableV1() {
  static const lightcc::cuda::CudaKernelTableV1 table = {1, lightcc::cuda::reduceNCuda,
                                                         lightcc::cuda::scaleCuda};
  return &table;
}
