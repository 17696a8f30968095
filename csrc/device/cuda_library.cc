// CudaLibrary: dlopen of liblightcc_cuda.so beside the core, its tables checked once.
#include "device/cuda_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace lightcc::device {
namespace {

// lightcc/lib/liblightcc_cuda.so, found from wherever this code was loaded (lightcc/_core*.so).
std::string besideCore() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&CudaLibrary::get), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string self = info.dli_fname;
  const size_t slash = self.rfind('/');
  return (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/lib/liblightcc_cuda.so";
}

template <class T>
const T* table(void* lib, const char* symbol, std::string* why, int version = 1) {
  using Getter = const T* (*)();
  auto get = reinterpret_cast<Getter>(dlsym(lib, symbol));
  if (get == nullptr) {
    *why += std::string(symbol) + " missing; ";
    return nullptr;
  }
  const T* t = get();
  if (t == nullptr || t->version != version) {
    *why += std::string(symbol) + " has an unexpected version; ";
    return nullptr;
  }
  return t;
}

}  // namespace

const CudaLibrary* CudaLibrary::get(std::string* why) {
  static std::once_flag once;
  static CudaLibrary lib;
  static std::string failure;
  std::call_once(once, [] {
    lib.path = besideCore();
    void* handle = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      failure = "cannot load the CUDA kernels library " + lib.path + ": " + (e ? e : "unknown error") +
                " (was lightcc built with nvcc on the PATH?)";
      return;
    }
    std::string missing;
    lib.reduce = table<cuda::CudaKernelTableV1>(handle, "lightccCudaKernelTableV1", &missing);
    lib.topk = table<cuda::CudaTopkTableV2>(handle, "lightccCudaTopkTableV2", &missing, 2);
    lib.merge = table<cuda::CudaMergeTableV1>(handle, "lightccCudaMergeTableV1", &missing, 2);
    lib.train = table<cuda::CudaTrainTableV1>(handle, "lightccCudaTrainTableV1", &missing);
    lib.rt = table<cuda::CudaRuntimeTableV1>(handle, "lightccCudaRuntimeTableV1", &missing);
    if (!missing.empty()) failure = lib.path + ": " + missing + "rebuild lightcc";
  });
  if (!failure.empty()) {
    if (why != nullptr) *why = failure;
    return nullptr;
  }
  return &lib;
}

}  // namespace lightcc::device
