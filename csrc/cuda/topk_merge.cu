// CUDA kernels of gTop-k's pair merge: one thread an element over topk_merge_ops.h's steps.
#include <cuda_runtime.h>

#include <string>

#include "cuda/topk_merge_cuda.h"
#include "kernels/half.h"
#include "kernels/topk_merge_ops.h"

namespace lightcc::cuda {
namespace {

using kernels::BFloat16;
using kernels::Half;

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;  // grid-stride beyond this

unsigned gridFor(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return unsigned(blocks < kMaxBlocks ? (blocks ? blocks : 1) : kMaxBlocks);
}

#define LIGHTCC_FOR_EACH(i, n) \
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += size_t(gridDim.x) * blockDim.x)

template <class W>
__global__ void unionKernel(const uint32_t* a_idx, const W* a_val, const uint32_t* b_idx, const W* b_val, size_t n,
                            uint32_t* slot_idx, float* slot_val, float* slot_rank) {
  LIGHTCC_FOR_EACH(t, 2 * n) {
    if (t < n) {
      kernels::mergeSlotA(t, a_idx, a_val, b_idx, b_val, n, slot_idx, slot_val, slot_rank);
    } else {
      kernels::mergeSlotB(t - n, a_idx, b_idx, b_val, n, slot_idx, slot_val, slot_rank);
    }
  }
}

template <class W>
__global__ void gatherKernel(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k,
                             uint32_t* out_idx, W* out_val) {
  LIGHTCC_FOR_EACH(t, k) { kernels::gatherSlot(t, pos, slot_idx, slot_val, out_idx, out_val); }
}

__global__ void offsetKernel(uint32_t* idx, size_t n, uint32_t offset) {
  LIGHTCC_FOR_EACH(i, n) { kernels::offsetIndex(i, idx, offset); }
}

__global__ void droppedKernel(const uint32_t* list, size_t n, const uint32_t* watched, size_t m, uint8_t* dropped) {
  LIGHTCC_FOR_EACH(i, m) { kernels::markDropped(i, list, n, watched, dropped); }
}

template <class W>
__global__ void restoreKernel(float* residual, const uint32_t* idx, const W* val, const uint8_t* dropped, size_t n) {
  LIGHTCC_FOR_EACH(i, n) { kernels::restoreDropped(i, residual, idx, val, dropped); }
}

template <class W>
__global__ void placeKernel(W* out, size_t count, const uint32_t* idx, const W* val, size_t n) {
  LIGHTCC_FOR_EACH(i, n) {
    if (idx[i] < count) out[idx[i]] = val[i];
  }
}

Status launched(const char* what) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return Status::OK();
  return Status::Internal(std::string("CUDA ") + what + " launch failed: " + cudaGetErrorString(err));
}

// Runs fn(W{}) with W the wire type of `dtype`; kInvalidArgument for other dtypes.
template <class Fn>
Status withWire(DataType dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat32: fn(0.0f); break;
    case DataType::kFloat16: fn(Half{}); break;
    case DataType::kBFloat16: fn(BFloat16{}); break;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      return Status::InvalidArgument(std::string("CUDA ") + what + " takes float32, float16 or bfloat16, not " +
                                     dtypeName(dtype));
  }
  return launched(what);
}

}  // namespace

Status mergeUnionCuda(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val, size_t n,
                      DataType dtype, uint32_t* slot_idx, float* slot_val, float* slot_rank, void* stream) {
  if (n == 0) return Status::OK();
  auto s = static_cast<cudaStream_t>(stream);
  return withWire(dtype, "top-k merge", [&](auto tag) {
    using W = decltype(tag);
    unionKernel<W><<<gridFor(2 * n), kThreads, 0, s>>>(a_idx, static_cast<const W*>(a_val), b_idx,
                                                       static_cast<const W*>(b_val), n, slot_idx, slot_val, slot_rank);
  });
}

Status gatherSlotsCuda(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k,
                       DataType dtype, uint32_t* out_idx, void* out_val, void* stream) {
  if (k == 0) return Status::OK();
  auto s = static_cast<cudaStream_t>(stream);
  return withWire(dtype, "top-k merge gather", [&](auto tag) {
    using W = decltype(tag);
    gatherKernel<W><<<gridFor(k), kThreads, 0, s>>>(slot_idx, slot_val, pos, k, out_idx, static_cast<W*>(out_val));
  });
}

Status markDroppedCuda(const uint32_t* list, size_t n, const uint32_t* watched, size_t m, uint8_t* dropped,
                       void* stream) {
  if (m == 0) return Status::OK();
  droppedKernel<<<gridFor(m), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(list, n, watched, m, dropped);
  return launched("top-k survivors");
}

Status offsetIndicesCuda(uint32_t* idx, size_t n, uint32_t offset, void* stream) {
  if (n == 0 || offset == 0) return Status::OK();
  offsetKernel<<<gridFor(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(idx, n, offset);
  return launched("top-k index offset");
}

Status restoreDroppedCuda(float* residual, const uint32_t* idx, const void* val, DataType dtype,
                          const uint8_t* dropped, size_t n, void* stream) {
  if (n == 0) return Status::OK();
  auto s = static_cast<cudaStream_t>(stream);
  return withWire(dtype, "top-k restore", [&](auto tag) {
    using W = decltype(tag);
    restoreKernel<W><<<gridFor(n), kThreads, 0, s>>>(residual, idx, static_cast<const W*>(val), dropped, n);
  });
}

Status placePairsCuda(void* out, size_t count, DataType dtype, const uint32_t* idx, const void* val, size_t n,
                      void* stream) {
  if (n == 0) return Status::OK();
  auto s = static_cast<cudaStream_t>(stream);
  return withWire(dtype, "top-k place", [&](auto tag) {
    using W = decltype(tag);
    placeKernel<W><<<gridFor(n), kThreads, 0, s>>>(static_cast<W*>(out), count, idx, static_cast<const W*>(val), n);
  });
}

}  // namespace lightcc::cuda

extern "C" const lightcc::cuda::CudaMergeTableV1* lightccCudaMergeTableV1() {
  using namespace lightcc::cuda;
  static const CudaMergeTableV1 table = {
      2, mergeUnionCuda, gatherSlotsCuda, markDroppedCuda, restoreDroppedCuda, placePairsCuda, offsetIndicesCuda,
  };
  return &table;
}
