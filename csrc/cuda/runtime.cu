// The CUDA runtime table (runtime_cuda.h): memory, streams, events, casts and integer Average.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cuda/runtime_cuda.h"
#include "kernels/half.h"

// Error policy. A failed runtime call is also stored as this thread's "last error", and
// reduce.cu / topk.cu read cudaGetLastError right after their launches: a stale error from,
// say, a refused cudaMalloc would be blamed on the next launch. So every failure is cleared
// here once it has become a Status. Sticky errors (a kernel faulted) are not lost by this: the
// context stays broken and every later call returns them again.
//
// No device or no driver is kSystemError (the machine lacks something, lightcc has no bug);
// every other failure is kInternal with the runtime's own name and text for the error.

namespace lightcc::cuda {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;  // grid-stride beyond this

// cudaErrorStubLibrary: the linker's stub libcuda.so was found instead of a driver, which is
// what a CPU machine with the toolkit installed looks like from here.
bool missingDeviceOrDriver(cudaError_t err) {
  return err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
         err == cudaErrorStubLibrary;
}

Status failure(const char* what, cudaError_t err) {
  (void)cudaGetLastError();  // see the error policy above
  std::string text = std::string(what) + " failed: " + cudaGetErrorName(err) + " (" +
                     cudaGetErrorString(err) + ")";
  if (missingDeviceOrDriver(err)) return Status::SystemError(text);
  return Status::Internal(text);
}

Status check(const char* what, cudaError_t err) {
  return err == cudaSuccess ? Status::OK() : failure(what, err);
}

cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t asEvent(void* e) { return static_cast<cudaEvent_t>(e); }

unsigned gridFor(size_t n) {
  size_t blocks = (n + kThreads - 1) / kThreads;
  return unsigned(blocks < kMaxBlocks ? (blocks ? blocks : 1) : kMaxBlocks);
}

// ---- devices and memory ----

// deviceCount is the probe the core runs before it decides whether GPU tensors are possible,
// also on machines with no GPU or no driver at all: those answer 0 and OK, not an error. "No
// driver" is how the runtime reports both a missing libcuda.so and one older than this runtime
// (cudaErrorInsufficientDriver), and the stub library; all three mean "no usable GPU here".
// Anything else (a driver/kernel-module mismatch, a failed initialisation) stays an error, so
// a user with a GPU hears why it is not used instead of silently training on the CPU.
Status deviceCount(int* count) {
  *count = 0;
  cudaError_t err = cudaGetDeviceCount(count);
  if (err == cudaSuccess) return Status::OK();
  if (missingDeviceOrDriver(err)) {
    (void)cudaGetLastError();
    *count = 0;
    return Status::OK();
  }
  *count = 0;
  return failure("cudaGetDeviceCount", err);
}

Status setDevice(int device) { return check("cudaSetDevice", cudaSetDevice(device)); }
Status getDevice(int* device) { return check("cudaGetDevice", cudaGetDevice(device)); }

// Device and managed memory report their device. Host memory reports -1 whether or not it is
// pinned or registered: it lives on the host, and frameworks (torch's pin_memory) call it a
// CPU tensor. Runtimes before CUDA 11 refused unknown host pointers with cudaErrorInvalidValue
// instead of answering cudaMemoryTypeUnregistered; both mean -1.
Status pointerDevice(const void* ptr, int* device) {
  *device = -1;
  if (ptr == nullptr) return Status::OK();
  cudaPointerAttributes attr{};
  cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
  if (err == cudaErrorInvalidValue) {
    (void)cudaGetLastError();
    return Status::OK();
  }
  if (err != cudaSuccess) return failure("cudaPointerGetAttributes", err);
  if (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged) {
    *device = attr.device;
  }
  return Status::OK();
}

Status deviceMalloc(void** ptr, size_t bytes) {
  *ptr = nullptr;
  cudaError_t err = cudaMalloc(ptr, bytes);
  if (err != cudaSuccess) {
    *ptr = nullptr;
    return failure(("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str(), err);
  }
  return Status::OK();
}

Status deviceFree(void* ptr) {
  if (ptr == nullptr) return Status::OK();
  return check("cudaFree", cudaFree(ptr));
}

Status memcpyAsync(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return Status::OK();
  return check("cudaMemcpyAsync",
               cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, asStream(stream)));
}

Status memsetAsync(void* dst, int value, size_t bytes, void* stream) {
  if (bytes == 0) return Status::OK();
  return check("cudaMemsetAsync", cudaMemsetAsync(dst, value, bytes, asStream(stream)));
}

// ---- streams and events ----
// Destroying nullptr is OK (as free(nullptr)), so an owner may release unconditionally.

Status streamCreate(void** stream) {
  cudaStream_t s = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  *stream = err == cudaSuccess ? static_cast<void*>(s) : nullptr;
  return check("cudaStreamCreateWithFlags", err);
}

Status streamDestroy(void* stream) {
  if (stream == nullptr) return Status::OK();
  return check("cudaStreamDestroy", cudaStreamDestroy(asStream(stream)));
}

Status streamSynchronize(void* stream) {
  return check("cudaStreamSynchronize", cudaStreamSynchronize(asStream(stream)));
}

Status eventCreate(void** event) {
  cudaEvent_t e = nullptr;
  cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  *event = err == cudaSuccess ? static_cast<void*>(e) : nullptr;
  return check("cudaEventCreateWithFlags", err);
}

Status eventDestroy(void* event) {
  if (event == nullptr) return Status::OK();
  return check("cudaEventDestroy", cudaEventDestroy(asEvent(event)));
}

Status eventRecord(void* event, void* stream) {
  return check("cudaEventRecord", cudaEventRecord(asEvent(event), asStream(stream)));
}

Status streamWaitEvent(void* stream, void* event) {
  return check("cudaStreamWaitEvent", cudaStreamWaitEvent(asStream(stream), asEvent(event), 0));
}

// cudaErrorNotReady is an answer, not a failure. Whether the runtime also files it as the last
// error has varied between versions; it is cleared only if it did, so a real error stored by
// an earlier launch on this thread is not lost.
Status eventQuery(void* event, bool* done) {
  cudaError_t err = cudaEventQuery(asEvent(event));
  *done = err == cudaSuccess;
  if (err == cudaErrorNotReady) {
    if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
    return Status::OK();
  }
  return check("cudaEventQuery", err);
}

Status eventSynchronize(void* event) {
  return check("cudaEventSynchronize", cudaEventSynchronize(asEvent(event)));
}

// ---- casts ----
// Every conversion goes through float with half.h's integer-only rounding, as the CPU does:
// float16 and bfloat16 values are exact floats, so float16 <-> bfloat16 rounds once.

using kernels::BFloat16;
using kernels::Half;

static inline __device__ float toF32(float x) { return x; }
static inline __device__ float toF32(Half x) { return kernels::halfToFloat(x.bits); }
static inline __device__ float toF32(BFloat16 x) { return kernels::bf16ToFloat(x.bits); }

template <class D>
static inline __device__ D fromF32(float x);
template <>
inline __device__ float fromF32<float>(float x) { return x; }
template <>
inline __device__ Half fromF32<Half>(float x) { return Half{kernels::floatToHalf(x)}; }
template <>
inline __device__ BFloat16 fromF32<BFloat16>(float x) {
  return BFloat16{kernels::floatToBf16(x)};
}

// Each element is read before it is written by the same thread, so dst == src is safe when
// both types have one size.
template <class D, class S>
__global__ void castKernel(D* dst, const S* src, size_t n) {
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = fromF32<D>(toF32(src[i]));
  }
}

bool castable(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// Calls fn(tag) with tag of the storage type of a float32/float16/bfloat16 dtype.
template <class Fn>
void withStorage(DataType dtype, Fn&& fn) {
  if (dtype == DataType::kFloat16) fn(Half{});
  else if (dtype == DataType::kBFloat16) fn(BFloat16{});
  else fn(0.0f);
}

Status launchError(const std::string& what) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return Status::OK();
  return Status::Internal("CUDA " + what + " launch failed: " + cudaGetErrorString(err));
}

Status cast(void* dst, DataType dstType, const void* src, DataType srcType, size_t count,
            void* stream) {
  if (!castable(dstType) || !castable(srcType)) {
    return Status::InvalidArgument(std::string("CUDA cast: ") + dtypeName(srcType) + " -> " +
                                   dtypeName(dstType) +
                                   ", expected float32, float16 or bfloat16 on both sides");
  }
  if (dst == src && dtypeSize(dstType) != dtypeSize(srcType)) {
    return Status::InvalidArgument(std::string("CUDA cast: ") + dtypeName(srcType) + " -> " +
                                   dtypeName(dstType) + " in place (sizes differ)");
  }
  if (count == 0) return Status::OK();
  if (dstType == srcType) {
    return memcpyAsync(dst, src, count * dtypeSize(dstType), stream).withContext("CUDA cast");
  }
  cudaStream_t s = asStream(stream);
  withStorage(dstType, [&](auto dtag) {
    using D = decltype(dtag);
    withStorage(srcType, [&](auto stag) {
      using S = decltype(stag);
      castKernel<D, S><<<gridFor(count), kThreads, 0, s>>>(static_cast<D*>(dst),
                                                           static_cast<const S*>(src), count);
    });
  });
  return launchError(std::string("cast ") + dtypeName(srcType) + " -> " + dtypeName(dstType));
}

// ---- integer Average ----

// The same expression as kernels::divideIntegers: through int64, C++ truncating division.
template <class T>
__global__ void divideKernel(T* p, size_t n, long long d) {
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    p[i] = static_cast<T>(static_cast<int64_t>(p[i]) / static_cast<int64_t>(d));
  }
}

template <class T>
void launchDivide(void* data, size_t n, long long d, cudaStream_t s) {
  divideKernel<T><<<gridFor(n), kThreads, 0, s>>>(static_cast<T*>(data), n, d);
}

// A divisor of 0 is refused: the CPU would trap, the GPU would write garbage silently.
Status divideIntegers(void* data, size_t count, DataType dtype, long long divisor,
                      void* stream) {
  if (!isValidDataType(int(dtype))) {
    return Status::InvalidArgument("CUDA integer divide: unknown dtype code " +
                                   std::to_string(int(dtype)));
  }
  if (isFloatType(dtype) || divisor == 1 || count == 0) return Status::OK();
  if (divisor == 0) return Status::InvalidArgument("CUDA integer divide: divisor 0");
  cudaStream_t s = asStream(stream);
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kBool: launchDivide<uint8_t>(data, count, divisor, s); break;
    case DataType::kInt8: launchDivide<int8_t>(data, count, divisor, s); break;
    case DataType::kUInt16: launchDivide<uint16_t>(data, count, divisor, s); break;
    case DataType::kInt16: launchDivide<int16_t>(data, count, divisor, s); break;
    case DataType::kInt32: launchDivide<int32_t>(data, count, divisor, s); break;
    case DataType::kInt64: launchDivide<int64_t>(data, count, divisor, s); break;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64: return Status::OK();  // floats divide through postscale (returned above)
  }
  return launchError(std::string("integer divide (") + dtypeName(dtype) + ")");
}

}  // namespace
}  // namespace lightcc::cuda

extern "C" const lightcc::cuda::CudaRuntimeTableV1* lightccCudaRuntimeTableV1() {
  using namespace lightcc::cuda;
  static const CudaRuntimeTableV1 table = {
      1,
      deviceCount,
      setDevice,
      getDevice,
      pointerDevice,
      deviceMalloc,
      deviceFree,
      memcpyAsync,
      memsetAsync,
      streamCreate,
      streamDestroy,
      streamSynchronize,
      eventCreate,
      eventDestroy,
      eventRecord,
      streamWaitEvent,
      eventQuery,
      eventSynchronize,
      cast,
      divideIntegers,
  };
  return &table;
}
