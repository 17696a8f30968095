// The dlopen boundary between the core and liblightcc_cuda.so, in C types only.
//
// Why: the two sides may be built with different C++ standard libraries. The binary wheels
// build the core with zig's libc++ (manylinux_2_28), while nvcc accepts only GCC's libstdc++ as
// its host library, so liblightcc_cuda.so there carries a static, hidden libstdc++. A Status
// (std::string inside) is 32 bytes in one and 40 in the other, and an exception thrown by one
// runtime cannot be caught by the other: nothing C++ may cross.
//
// What crosses: one extern "C" symbol, lightccCudaAbiV1, handing out each function table of
// reduce_cuda.h, topk_cuda.h, topk_merge_cuda.h, topk_train_cuda.h and runtime_cuda.h in that
// table's own layout (version first, then its function pointers in order), with every function
// that returns a Status replaced by one writing a LightccCudaStatus instead. Every other
// parameter and return type in those tables is already a C type (pointers, sizes, numbers,
// the uint8_t enums of dtype.h). The library fills the tables from its own C++ ones
// (exportTables, c_abi_export.cc); the core turns them back into C++ tables of the same types
// (importTable, device/cuda_library.cc), so no caller on either side changes.
//
// Adding a function to a table: add the member to the table's list in TableList below; the
// static_assert there fails when a table gains a member the list lacks.
#pragma once

#include <cstddef>
#include <cstring>
#include <exception>

#include "common/status.h"
#include "cuda/reduce_cuda.h"
#include "cuda/runtime_cuda.h"
#include "cuda/topk_cuda.h"
#include "cuda/topk_merge_cuda.h"
#include "cuda/topk_train_cuda.h"

extern "C" {

// A Status as it crosses: code (StatusCode's value, 0 = OK) and the message, cut to fit.
struct LightccCudaStatus {
  int code;
  char message[1024];
};

struct LightccCudaAbiV1 {
  int version;  // 1
  const void* reduce;   // lightcc::cuda::CudaKernelTableV1's layout, C functions
  const void* topk;     // CudaTopkTableV2's
  const void* merge;    // CudaMergeTableV1's
  const void* train;    // CudaTrainTableV1's
  const void* runtime;  // CudaRuntimeTableV1's
  // What the library was built for: CMake's CUDA_ARCHITECTURES ("75-real ... 120-virtual",
  // space-separated; -real is machine code for that GPU, -virtual is PTX the driver compiles for
  // newer ones), and the nvcc version that built it.
  const char* architectures;
  const char* cudaVersion;
};

const LightccCudaAbiV1* lightccCudaAbiV1();
}

namespace lightcc::cuda::abi {

// A function pointer stored as another function type (the tables keep their C++ member types);
// through void(*)() since that is the cast compilers accept as deliberate.
template <class To, class From>
To functionCast(From f) {
  return reinterpret_cast<To>(reinterpret_cast<void (*)()>(f));
}

// ---- one table member: how it crosses in each direction ----

// Primary: the member returns no Status (e.g. topk's workspaceBytes); its pointer crosses as is.
template <auto Member>
struct Crossing {
  template <const void* (*)()>
  static void exportTo(void* c, const void* cpp) {
    using Table = typename MemberOf<decltype(Member)>::Table;
    static_cast<Table*>(c)->*Member = static_cast<const Table*>(cpp)->*Member;
  }
  template <const void* (*)()>
  static void importTo(void* cpp, const void* c) {
    using Table = typename MemberOf<decltype(Member)>::Table;
    static_cast<Table*>(cpp)->*Member = static_cast<const Table*>(c)->*Member;
  }

 private:
  template <class M>
  struct MemberOf;
  template <class T, class F>
  struct MemberOf<F T::*> {
    using Table = T;
  };
};

// A Status member: the C side writes a LightccCudaStatus; the C++ side gets a Status back.
// Own (export) is the library's C++ table; Loaded (import) is the C table the core found.
template <class T, class... A, Status (*T::*Member)(A...)>
struct Crossing<Member> {
  using CFunction = void (*)(LightccCudaStatus*, A...);

  template <const void* (*Own)()>
  static void exportCall(LightccCudaStatus* out, A... args) {
    out->code = int(StatusCode::kInternal);
    out->message[0] = '\0';
    const Status st = [&]() -> Status {
      try {
        return (static_cast<const T*>(Own())->*Member)(args...);
      } catch (const std::exception& e) {  // never let one runtime's exception reach the other
        return Status::Internal(std::string("CUDA library: ") + e.what());
      } catch (...) {
        return Status::Internal("CUDA library: unknown exception");
      }
    }();
    out->code = int(st.code());
    std::strncpy(out->message, st.message().c_str(), sizeof(out->message) - 1);
    out->message[sizeof(out->message) - 1] = '\0';
  }

  template <const void* (*Loaded)()>
  static Status importCall(A... args) {
    LightccCudaStatus out;
    out.code = int(StatusCode::kInternal);
    std::strcpy(out.message, "the CUDA library wrote no status");
    functionCast<CFunction>(static_cast<const T*>(Loaded())->*Member)(&out, args...);
    if (out.code == 0) return Status::OK();
    return Status(static_cast<StatusCode>(out.code), out.message);
  }

  template <const void* (*Own)()>
  static void exportTo(void* c, const void*) {
    static_cast<T*>(c)->*Member = functionCast<Status (*)(A...)>(&exportCall<Own>);
  }
  template <const void* (*Loaded)()>
  static void importTo(void* cpp, const void*) {
    static_cast<T*>(cpp)->*Member = &importCall<Loaded>;
  }
};

// ---- whole tables ----

template <class Table, auto... Members>
struct TableList {
  // Every member is a function pointer after the leading int version: a table that gained a
  // member its list lacks has a different size.
  static_assert(sizeof(Table) == sizeof(void*) * (1 + sizeof...(Members)),
                "a CUDA table's member list in c_abi.h is incomplete");

  // Own returns the library's C++ table; the result has its version and C functions.
  template <const void* (*Own)()>
  static Table exportTable() {
    Table c{};
    c.version = static_cast<const Table*>(Own())->version;
    (Crossing<Members>::template exportTo<Own>(&c, Own()), ...);
    return c;
  }

  // Loaded returns the C table from the library (checked for its version by the caller).
  template <const void* (*Loaded)()>
  static Table importTable() {
    Table cpp{};
    cpp.version = static_cast<const Table*>(Loaded())->version;
    (Crossing<Members>::template importTo<Loaded>(&cpp, Loaded()), ...);
    return cpp;
  }
};

using KernelList = TableList<CudaKernelTableV1, &CudaKernelTableV1::reduceN, &CudaKernelTableV1::scale>;
using TopkList = TableList<CudaTopkTableV2, &CudaTopkTableV2::workspaceBytes, &CudaTopkTableV2::selectTopk,
                           &CudaTopkTableV2::scatterAddRanks, &CudaTopkTableV2::accumulateResidual,
                           &CudaTopkTableV2::clearSelected, &CudaTopkTableV2::momentumCorrect,
                           &CudaTopkTableV2::pack, &CudaTopkTableV2::unpack, &CudaTopkTableV2::roundSelected,
                           &CudaTopkTableV2::fromFloat>;
using MergeList = TableList<CudaMergeTableV1, &CudaMergeTableV1::mergeUnion, &CudaMergeTableV1::gatherSlots,
                            &CudaMergeTableV1::markDropped, &CudaMergeTableV1::restoreDropped,
                            &CudaMergeTableV1::placePairs, &CudaMergeTableV1::offsetIndices>;
using TrainList = TableList<CudaTrainTableV1, &CudaTrainTableV1::dgcAccumulate>;
using RuntimeList = TableList<
    CudaRuntimeTableV1, &CudaRuntimeTableV1::deviceCount, &CudaRuntimeTableV1::setDevice,
    &CudaRuntimeTableV1::getDevice, &CudaRuntimeTableV1::pointerDevice, &CudaRuntimeTableV1::malloc,
    &CudaRuntimeTableV1::free, &CudaRuntimeTableV1::memcpyAsync, &CudaRuntimeTableV1::memsetAsync,
    &CudaRuntimeTableV1::streamCreate, &CudaRuntimeTableV1::streamDestroy, &CudaRuntimeTableV1::streamSynchronize,
    &CudaRuntimeTableV1::eventCreate, &CudaRuntimeTableV1::eventDestroy, &CudaRuntimeTableV1::eventRecord,
    &CudaRuntimeTableV1::streamWaitEvent, &CudaRuntimeTableV1::eventQuery, &CudaRuntimeTableV1::eventSynchronize,
    &CudaRuntimeTableV1::cast, &CudaRuntimeTableV1::divideIntegers>;

}  // namespace lightcc::cuda::abi
