// The CUDA runtime calls the core needs (memory, streams, events, casts), handed out by liblightcc_cuda.so.
#pragma once

#include <cstddef>

#include "common/dtype.h"
#include "common/status.h"

// Like reduce_cuda.h and topk_cuda.h: liblightcc_cuda.so links the CUDA runtime statically and
// the core dlopens it, so the core never includes a CUDA header nor links libcudart. Streams and
// events travel as void* (cudaStream_t / cudaEvent_t); nullptr as a stream is the legacy default
// stream. Every call returns kInternal with cudaGetErrorString's text when CUDA fails, and
// kSystemError when no device or driver is present.

namespace lightcc::cuda {

struct CudaRuntimeTableV1 {
  int version;  // 1
  // Devices. deviceCount gives 0 (and OK) on a machine with a driver but no GPU.
  Status (*deviceCount)(int* count);
  Status (*setDevice)(int device);
  Status (*getDevice)(int* device);
  // The device ordinal a pointer lives on (device or managed memory); -1 for host memory,
  // pinned or not, and for pointers the runtime does not know.
  Status (*pointerDevice)(const void* ptr, int* device);
  // Memory on the current device (cudaMalloc / cudaFree; free(nullptr) is OK).
  Status (*malloc)(void** ptr, size_t bytes);
  Status (*free)(void* ptr);
  // Stream-ordered copies (cudaMemcpyDefault: either side may be host or device) and fills.
  Status (*memcpyAsync)(void* dst, const void* src, size_t bytes, void* stream);
  Status (*memsetAsync)(void* dst, int value, size_t bytes, void* stream);
  // Streams: created non-blocking (no implicit order with the legacy default stream).
  Status (*streamCreate)(void** stream);
  Status (*streamDestroy)(void* stream);
  Status (*streamSynchronize)(void* stream);
  // Events: created with timing disabled (they only order work).
  Status (*eventCreate)(void** event);
  Status (*eventDestroy)(void* event);
  Status (*eventRecord)(void* event, void* stream);
  Status (*streamWaitEvent)(void* stream, void* event);
  // *done = the work before the event's record has finished; a failed kernel reports its error.
  Status (*eventQuery)(void* event, bool* done);
  Status (*eventSynchronize)(void* event);
  // Element-wise conversion between float32, float16 and bfloat16 (the compression casts),
  // rounding to nearest even exactly as kernels/half.h does on the CPU. dst may equal src only
  // when both types have the same size.
  Status (*cast)(void* dst, DataType dst_type, const void* src, DataType src_type, size_t count,
                 void* stream);
  // Integer Average: dst[i] = src[i] / divisor truncating toward zero, as
  // kernels::divideIntegers does; no-op for floating types or divisor 1; divisor 0 is
  // kInvalidArgument.
  Status (*divideIntegers)(void* data, size_t count, DataType dtype, long long divisor,
                           void* stream);
};

}  // namespace lightcc::cuda

extern "C" const lightcc::cuda::CudaRuntimeTableV1* lightccCudaRuntimeTableV1();
