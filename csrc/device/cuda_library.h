// CudaLibrary: liblightcc_cuda.so loaded at run time, and the function tables it hands out.
//
// The core links no CUDA: a machine without a GPU or driver imports lightcc the same. The
// library is looked up beside the core (lightcc/lib/liblightcc_cuda.so); loading happens on
// first use, once per process.
#pragma once

#include <string>

#include "common/status.h"
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

  // The loaded library, or null with *why saying what failed (not built, no driver, ...).
  static const CudaLibrary* get(std::string* why);
};

}  // namespace lightcc::device
