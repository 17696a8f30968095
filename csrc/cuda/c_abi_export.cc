// lightccCudaAbiV1: liblightcc_cuda.so's one entry point for the core, its tables in C types (c_abi.h).
#include "cuda/c_abi.h"

#ifndef LIGHTCC_CUDA_ARCHITECTURES
#error "cmake/cuda.cmake defines LIGHTCC_CUDA_ARCHITECTURES (the CUDA_ARCHITECTURES this library is built for)"
#endif
#ifndef LIGHTCC_CUDA_COMPILER_VERSION
#error "cmake/cuda.cmake defines LIGHTCC_CUDA_COMPILER_VERSION (nvcc's version)"
#endif

namespace lightcc::cuda::abi {
namespace {

const void* ownKernel() { return lightccCudaKernelTableV1(); }
const void* ownTopk() { return lightccCudaTopkTableV2(); }
const void* ownMerge() { return lightccCudaMergeTableV1(); }
const void* ownTrain() { return lightccCudaTrainTableV1(); }
const void* ownRuntime() { return lightccCudaRuntimeTableV1(); }

}  // namespace
}  // namespace lightcc::cuda::abi

extern "C" const LightccCudaAbiV1* lightccCudaAbiV1() {
  using namespace lightcc::cuda::abi;
  static const auto reduce = KernelList::exportTable<ownKernel>();
  static const auto topk = TopkList::exportTable<ownTopk>();
  static const auto merge = MergeList::exportTable<ownMerge>();
  static const auto train = TrainList::exportTable<ownTrain>();
  static const auto runtime = RuntimeList::exportTable<ownRuntime>();
  static const LightccCudaAbiV1 abi = {
      1, &reduce, &topk, &merge, &train, &runtime, LIGHTCC_CUDA_ARCHITECTURES, LIGHTCC_CUDA_COMPILER_VERSION,
  };
  return &abi;
}
