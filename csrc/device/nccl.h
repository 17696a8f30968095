// NCCL at run time: libnccl.so.2 found and dlopened on first use, and NcclComm, a Comm over one communicator.
//
// No NCCL header and no link-time dependency: the few types of NCCL's C ABI the engine uses are
// declared here (they have been stable since NCCL 2.x). The library tried first is the hint
// (LIGHTCC_NCCL_LIBRARY, else the nvidia-nccl wheel's that the Python side found, the one torch
// also loads), then whatever the loader finds as libnccl.so.2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "device/device.h"

namespace lightcc::device {

struct NcclUniqueId {
  char internal[128];
};

class NcclLibrary {
 public:
  // Loads once per process, `hint` first. Null + *why on failure.
  static const NcclLibrary* get(const std::string& hint, std::string* why);
  int version() const { return version_; }  // e.g. 22809
  std::string path() const { return path_; }
  Status uniqueId(NcclUniqueId* id) const;

  // Raw entry points, resolved at load time (NCCL's C signatures with opaque pointers).
  using Comm = void*;
  int (*getVersion)(int*) = nullptr;
  int (*getUniqueId)(NcclUniqueId*) = nullptr;
  int (*commInitRank)(Comm*, int, NcclUniqueId, int) = nullptr;
  int (*commSplit)(Comm, int, int, Comm*, void*) = nullptr;  // null before NCCL 2.18
  int (*commDestroy)(Comm) = nullptr;
  int (*commAbort)(Comm) = nullptr;
  int (*commGetAsyncError)(Comm, int*) = nullptr;
  const char* (*getErrorString)(int) = nullptr;
  const char* (*getLastError)(Comm) = nullptr;
  int (*allReduce)(const void*, void*, size_t, int, int, Comm, void*) = nullptr;
  int (*reduceScatter)(const void*, void*, size_t, int, int, Comm, void*) = nullptr;
  int (*allGather)(const void*, void*, size_t, int, Comm, void*) = nullptr;
  int (*broadcast)(const void*, void*, size_t, int, int, Comm, void*) = nullptr;
  int (*send)(const void*, size_t, int, int, Comm, void*) = nullptr;
  int (*recv)(void*, size_t, int, int, Comm, void*) = nullptr;
  int (*groupStart)() = nullptr;
  int (*groupEnd)() = nullptr;

  // A Status for an NCCL result code, naming the call (and NCCL's last error text).
  Status check(int result, const char* call, Comm comm = nullptr) const;

 private:
  int version_ = 0;
  std::string path_;
};

// NCCL's data type for one of ours, or -1 when NCCL cannot reduce it (int16/uint16: move them
// as bytes, reduce them elsewhere).
int ncclDataType(DataType dtype);

class NcclComm : public Comm {
 public:
  // Collective over the members: every member calls it with the same id. `stream` is the
  // executor's (a CudaDevice's); the communicator is made on the current device.
  static Status create(const NcclLibrary* nccl, const NcclUniqueId& id, int members, int me, void* stream,
                       const std::string& what, std::unique_ptr<NcclComm>* out);
  // ncclCommSplit of this communicator: members with the same color form one of `members`
  // members, ranked by `key` (0..members-1). Collective over every member of this one.
  Status split(int color, int key, int members, const std::string& what, std::unique_ptr<NcclComm>* out);
  ~NcclComm() override;

  int size() const override { return size_; }
  int rank() const override { return rank_; }
  Status allreduce(void* buf, size_t count, DataType dtype, ReduceOp op) override;
  Status reduceScatter(const void* in, void* out, size_t count, DataType dtype, ReduceOp op) override;
  Status allGather(const void* in, void* out, size_t bytes) override;
  Status allGatherV(const void* in, void* out, const std::vector<size_t>& bytes) override;
  Status broadcast(void* buf, size_t bytes, int root) override;
  Status alltoallV(const void* in, const std::vector<size_t>& send, void* out,
                   const std::vector<size_t>& recv) override;
  Status sendRecv(int peer, const void* send, size_t send_bytes, void* recv, size_t recv_bytes) override;
  void abort() override;
  Status asyncError() override;

 private:
  NcclComm(const NcclLibrary* nccl, void* comm, int size, int rank, void* stream, std::string what)
      : nccl_(nccl), comm_(comm), size_(size), rank_(rank), stream_(stream), what_(std::move(what)) {}
  Status reduceArgs(DataType dtype, ReduceOp op, int* nd, int* nop) const;
  const NcclLibrary* nccl_;
  void* comm_;
  int size_;
  int rank_;
  void* stream_;
  std::string what_;  // "process set 0 on channel 1", for messages
  bool aborted_ = false;
};

}  // namespace lightcc::device
