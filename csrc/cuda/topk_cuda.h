// Host launchers for the CUDA top-k kernels: select, scatter-add, residual, momentum, fusion copy.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

// Like reduce_cuda.h: these live in liblightcc_cuda.so, which the module dlopens; the one
// extern "C" symbol below hands out the table. No CUDA header here; streams travel as void*.
// Every launcher enqueues on `stream` (a cudaStream_t; nullptr = the legacy default stream) and
// returns without waiting; pointers are device pointers unless a comment says host.
// Arithmetic is csrc/kernels/topk_ops.h, shared with the CPU kernels: same bits on both.

namespace lightcc::cuda {

// One tensor of a fusion buffer: `bytes` at device address `ptr`, living at `offset` bytes
// into the buffer. Host struct.
struct CudaSegment {
  void* ptr;
  size_t offset;
  size_t bytes;
};

// Device scratch that selectTopkCuda needs for `count` elements (a few bytes per 4096).
size_t topkWorkspaceBytesCuda(size_t count);

// kernels::selectTopkAny on the GPU, with the same result: the k largest |v| (NaN above inf,
// ties to the lowest indices), indices strictly ascending, values in the input dtype. Exact
// radix select (three histogram passes) and an order-preserving compaction (count, scan,
// write), all on the device with no host synchronisation. `workspace`: 16-byte aligned device
// memory of at least topkWorkspaceBytesCuda(count), not shared with concurrent work.
// kInvalidArgument for other dtypes, k > count, count > 2^32 - 1 or a short workspace.
Status selectTopkCuda(const void* values, DataType dtype, size_t count, size_t k,
                      uint32_t* indicesOut, void* valuesOut, void* workspace,
                      size_t workspaceBytes, void* stream);

// Adds every rank's k pairs into dst in rank order 0..nranks-1 (one launch per rank, so the
// stream orders them): bit-identical to kernels::scatterAddRanksAny. `indices` and `values`
// are HOST arrays of nranks device pointers. Indices must be unique within a rank (selectTopk
// output is); an index >= count is skipped and counted in *badIndices (a device counter the
// caller zeroes and reads back; may be null), so a corrupt peer cannot write out of bounds.
Status scatterAddRanksCuda(float* dst, size_t count, const uint32_t* const* indices,
                           const void* const* values, DataType dtype, int nranks, size_t k,
                           unsigned int* badIndices, void* stream);

// residual += scale * grad; grad in float32/float16/bfloat16.
Status accumulateResidualCuda(float* residual, const void* grad, DataType dtype, size_t count,
                              float scale, void* stream);
// residual[indices[i]] = 0 for i < k.
Status clearSelectedCuda(float* residual, const uint32_t* indices, size_t k, void* stream);
// DGC momentum correction: u = momentum * u + grad; v = v + u.
Status momentumCorrectCuda(float* u, float* v, const void* grad, DataType dtype, size_t count,
                           float momentum, void* stream);

// 16-bit values on the wire: wire[i] = selected[i] in `dtype` (float32/float16/bfloat16); the
// residual at indices[i] keeps what the rounding lost (kernels::wireRemainder).
Status roundSelectedCuda(float* residual, const uint32_t* indices, const float* selected, void* wire,
                         DataType dtype, size_t k, void* stream);
// dst = src rounded to `dtype` (float32/float16/bfloat16), count elements.
Status fromFloatCuda(void* dst, const float* src, size_t count, DataType dtype, void* stream);

// Fusion buffer copies: pack copies every segment's bytes to buffer + offset, unpack copies
// them back. `segments` is a HOST array (read before the call returns). Segments must not
// overlap each other in the buffer.
Status packCuda(void* buffer, const CudaSegment* segments, int n, void* stream);
Status unpackCuda(const void* buffer, const CudaSegment* segments, int n, void* stream);

// What dlopen users look up: bump the version when a signature changes.
struct CudaTopkTableV2 {
  int version;  // 2 (added roundSelected, fromFloat)
  size_t (*workspaceBytes)(size_t count);
  Status (*selectTopk)(const void* values, DataType dtype, size_t count, size_t k,
                       uint32_t* indicesOut, void* valuesOut, void* workspace,
                       size_t workspaceBytes, void* stream);
  Status (*scatterAddRanks)(float* dst, size_t count, const uint32_t* const* indices,
                            const void* const* values, DataType dtype, int nranks, size_t k,
                            unsigned int* badIndices, void* stream);
  Status (*accumulateResidual)(float* residual, const void* grad, DataType dtype, size_t count,
                               float scale, void* stream);
  Status (*clearSelected)(float* residual, const uint32_t* indices, size_t k, void* stream);
  Status (*momentumCorrect)(float* u, float* v, const void* grad, DataType dtype, size_t count,
                            float momentum, void* stream);
  Status (*pack)(void* buffer, const CudaSegment* segments, int n, void* stream);
  Status (*unpack)(const void* buffer, const CudaSegment* segments, int n, void* stream);
  Status (*roundSelected)(float* residual, const uint32_t* indices, const float* selected, void* wire,
                          DataType dtype, size_t k, void* stream);
  Status (*fromFloat)(void* dst, const float* src, size_t count, DataType dtype, void* stream);
};

}  // namespace lightcc::cuda

extern "C" const lightcc::cuda::CudaTopkTableV2* lightccCudaTopkTableV2();
