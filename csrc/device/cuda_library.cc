// CudaLibrary: dlopen of liblightcc_cuda.so beside the core, its C tables checked and turned into C++ ones once.
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

// The library's C tables, set once (under fromAbi's once_flag) before any C++ table made from
// them is handed out; the import thunks of cuda/c_abi.h read them through these.
const LightccCudaAbiV1* gAbi = nullptr;
const void* loadedKernel() { return gAbi->reduce; }
const void* loadedTopk() { return gAbi->topk; }
const void* loadedMerge() { return gAbi->merge; }
const void* loadedTrain() { return gAbi->train; }
const void* loadedRuntime() { return gAbi->runtime; }

// Every table starts with its int version.
void checkTable(const void* table, const char* name, int version, std::string* missing) {
  if (table == nullptr) {
    *missing += std::string(name) + " missing; ";
  } else if (*static_cast<const int*>(table) != version) {
    *missing += std::string(name) + " has version " + std::to_string(*static_cast<const int*>(table)) +
                ", this core needs " + std::to_string(version) + "; ";
  }
}

}  // namespace

const CudaLibrary* CudaLibrary::fromAbi(const LightccCudaAbiV1* abi, const std::string& path, std::string* why) {
  static std::once_flag once;
  static CudaLibrary lib;
  static std::string failure;
  std::call_once(once, [&] {
    lib.path = path;
    if (abi == nullptr || abi->version != 1) {
      failure = path + ": lightccCudaAbiV1 " + (abi ? "has version " + std::to_string(abi->version) : "is null") +
                ", this core needs 1; install the lightcc-cuda13 of this lightcc's version, or rebuild lightcc";
      return;
    }
    std::string missing;
    checkTable(abi->reduce, "the reduction table", 1, &missing);
    checkTable(abi->topk, "the top-k table", 2, &missing);
    checkTable(abi->merge, "the top-k merge table", 2, &missing);
    checkTable(abi->train, "the training table", 1, &missing);
    checkTable(abi->runtime, "the runtime table", 1, &missing);
    if (!missing.empty()) {
      failure = path + ": " + missing + "install the lightcc-cuda13 of this lightcc's version, or rebuild lightcc";
      return;
    }
    gAbi = abi;
    static const auto reduce = cuda::abi::KernelList::importTable<loadedKernel>();
    static const auto topk = cuda::abi::TopkList::importTable<loadedTopk>();
    static const auto merge = cuda::abi::MergeList::importTable<loadedMerge>();
    static const auto train = cuda::abi::TrainList::importTable<loadedTrain>();
    static const auto rt = cuda::abi::RuntimeList::importTable<loadedRuntime>();
    lib.reduce = &reduce;
    lib.topk = &topk;
    lib.merge = &merge;
    lib.train = &train;
    lib.rt = &rt;
    lib.architectures = abi->architectures ? abi->architectures : "";
    lib.cudaVersion = abi->cudaVersion ? abi->cudaVersion : "";
  });
  if (!failure.empty()) {
    if (why != nullptr) *why = failure;
    return nullptr;
  }
  return &lib;
}

const CudaLibrary* CudaLibrary::get(std::string* why) {
  static std::once_flag once;
  static const CudaLibrary* lib = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    const std::string path = besideCore();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      failure = "cannot load the CUDA kernels library " + path + ": " + (e ? e : "unknown error") +
                " (install the lightcc-cuda13 wheel, or build lightcc with nvcc on the PATH)";
      return;
    }
    using Getter = const LightccCudaAbiV1* (*)();
    auto getAbi = reinterpret_cast<Getter>(dlsym(handle, "lightccCudaAbiV1"));
    if (getAbi == nullptr) {
      failure = path + ": lightccCudaAbiV1 missing (built for another lightcc version); install the lightcc-cuda13 of this lightcc's version, or rebuild lightcc";
      return;
    }
    lib = fromAbi(getAbi(), path, &failure);
  });
  if (lib == nullptr) {
    if (why != nullptr) *why = failure;
    return nullptr;
  }
  return lib;
}

}  // namespace lightcc::device
