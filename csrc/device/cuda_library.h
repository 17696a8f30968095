// CudaLibrary: liblightcc_cuda.so loaded at run time, and the function tables it hands out.
//
// The core links no CUDA: a machine without a GPU or driver imports lightcc the same. The
// library is looked up beside the core (lightcc/lib/liblightcc_cuda.so: a source build with nvcc
// writes it there, the lightcc-cuda13 wheel installs it there); loading happens on first use,
// once per process. Everything crosses in C types (cuda/c_abi.h), since the library may be
// built with another C++ standard library than the core.
#pragma once

#include <string>

#include "common/status.h"
#include "cuda/c_abi.h"
#include "cuda/reduce_cuda.h"
#include "cuda/runtime_cuda.h"
#include "cuda/topk_cuda.h"
#include "cuda/topk_merge_cuda.h"
#include "cuda/topk_train_cuda.h"

namespace lightcc::device {

struct CudaLibrary {
  std::string path;
  const cuda::CudaKernelTableV1* reduce = nullptr;
  const cuda::CudaTopkTableV2* topk = nullptr;
  const cuda::CudaMergeTableV1* merge = nullptr;
  const cuda::CudaTrainTableV1* train = nullptr;
  const cuda::CudaRuntimeTableV1* rt = nullptr;
  std::string architectures;  // CMake's CUDA_ARCHITECTURES it was built for, e.g. "75-real 80-real ... 120-virtual"
  std::string cudaVersion;    // the nvcc that built it

  // The loaded library, or null with *why saying what failed (not built, no driver, ...).
  static const CudaLibrary* get(std::string* why);

  // The tables of `abi` (lightccCudaAbiV1 of a library linked in, as tests/gpu/kernels_test does,
  // or found by get()) as C++ tables, or null with *why naming what does not match this core.
  // Once per process: the first call's tables are kept.
  static const CudaLibrary* fromAbi(const LightccCudaAbiV1* abi, const std::string& path, std::string* why);
};

}  // namespace lightcc::device
