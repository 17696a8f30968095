// NCCL at run time: the library's symbols resolved once, and NcclComm's collectives on the executor's stream.
#include "device/nccl.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace lightcc::device {
namespace {

// NCCL's C ABI values (nccl.h): result codes, data types, reduction ops.
constexpr int kNcclSuccess = 0;
constexpr int kNcclInProgress = 7;
constexpr int kNcclInt8 = 0, kNcclUint8 = 1, kNcclInt32 = 2, kNcclInt64 = 4, kNcclFloat16 = 6, kNcclFloat32 = 7,
              kNcclFloat64 = 8, kNcclBfloat16 = 9;
constexpr int kNcclSum = 0, kNcclProd = 1, kNcclMax = 2, kNcclMin = 3;

template <class F>
bool resolve(void* lib, const char* name, F* out, std::string* missing) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  if (*out == nullptr) *missing += std::string(name) + " ";
  return *out != nullptr;
}

}  // namespace

int ncclDataType(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kBool: return kNcclUint8;
    case DataType::kInt8: return kNcclInt8;
    case DataType::kInt32: return kNcclInt32;
    case DataType::kInt64: return kNcclInt64;
    case DataType::kFloat16: return kNcclFloat16;
    case DataType::kBFloat16: return kNcclBfloat16;
    case DataType::kFloat32: return kNcclFloat32;
    case DataType::kFloat64: return kNcclFloat64;
    case DataType::kInt16:
    case DataType::kUInt16: return -1;  // NCCL has no 16-bit integer type
  }
  return -1;
}

const NcclLibrary* NcclLibrary::get(const std::string& hint, std::string* why) {
  static std::once_flag once;
  static NcclLibrary lib;
  static std::string failure;
  std::call_once(once, [&hint] {
    std::vector<std::string> candidates;
    if (!hint.empty()) candidates.push_back(hint);
    candidates.push_back("libnccl.so.2");
    candidates.push_back("libnccl.so");
    void* handle = nullptr;
    std::string tried;
    for (const auto& c : candidates) {
      handle = dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (handle != nullptr) {
        lib.path_ = c;
        break;
      }
      const char* e = dlerror();
      tried += "\n  " + c + ": " + (e ? e : "not found");
    }
    if (handle == nullptr) {
      failure = "cannot load NCCL (set LIGHTCC_NCCL_LIBRARY, or pip install nvidia-nccl-cu12/cu13):" + tried;
      return;
    }
    std::string missing;
    resolve(handle, "ncclGetVersion", &lib.getVersion, &missing);
    resolve(handle, "ncclGetUniqueId", &lib.getUniqueId, &missing);
    resolve(handle, "ncclCommInitRank", &lib.commInitRank, &missing);
    resolve(handle, "ncclCommDestroy", &lib.commDestroy, &missing);
    resolve(handle, "ncclCommAbort", &lib.commAbort, &missing);
    resolve(handle, "ncclCommGetAsyncError", &lib.commGetAsyncError, &missing);
    resolve(handle, "ncclGetErrorString", &lib.getErrorString, &missing);
    resolve(handle, "ncclAllReduce", &lib.allReduce, &missing);
    resolve(handle, "ncclReduceScatter", &lib.reduceScatter, &missing);
    resolve(handle, "ncclAllGather", &lib.allGather, &missing);
    resolve(handle, "ncclBroadcast", &lib.broadcast, &missing);
    resolve(handle, "ncclSend", &lib.send, &missing);
    resolve(handle, "ncclRecv", &lib.recv, &missing);
    resolve(handle, "ncclGroupStart", &lib.groupStart, &missing);
    resolve(handle, "ncclGroupEnd", &lib.groupEnd, &missing);
    if (!missing.empty()) {
      failure = lib.path_ + " lacks " + missing + "(NCCL 2.7 or newer is needed)";
      return;
    }
    // Optional: newer than the minimum.
    lib.commSplit = reinterpret_cast<decltype(lib.commSplit)>(dlsym(handle, "ncclCommSplit"));
    lib.getLastError = reinterpret_cast<decltype(lib.getLastError)>(dlsym(handle, "ncclGetLastError"));
    lib.getVersion(&lib.version_);
  });
  if (!failure.empty()) {
    if (why != nullptr) *why = failure;
    return nullptr;
  }
  return &lib;
}

Status NcclLibrary::uniqueId(NcclUniqueId* id) const { return check(getUniqueId(id), "ncclGetUniqueId"); }

Status NcclLibrary::check(int result, const char* call, Comm comm) const {
  if (result == kNcclSuccess || result == kNcclInProgress) return Status::OK();
  std::string msg = std::string(call) + " failed: " + getErrorString(result);
  if (getLastError != nullptr) {
    const char* last = getLastError(comm);
    if (last != nullptr && *last != '\0') msg += std::string(" (") + last + ")";
  }
  // 6 = ncclRemoteError: a peer went away or the network broke.
  return result == 6 ? Status::PeerFailure(msg) : Status::SystemError(msg);
}

Status NcclComm::create(const NcclLibrary* nccl, const NcclUniqueId& id, int members, int me, void* stream,
                        const std::string& what, std::unique_ptr<NcclComm>* out) {
  void* comm = nullptr;
  LIGHTCC_RETURN_IF_ERROR(nccl->check(nccl->commInitRank(&comm, members, id, me), "ncclCommInitRank")
                              .withContext("NCCL communicator for " + what));
  out->reset(new NcclComm(nccl, comm, members, me, stream, what));
  return Status::OK();
}

Status NcclComm::split(int color, int key, int members, const std::string& what, std::unique_ptr<NcclComm>* out) {
  if (nccl_->commSplit == nullptr) {
    return Status::PreconditionFailed("LIGHT_2D_ALLREDUCE on GPU tensors needs ncclCommSplit (NCCL 2.18+); " +
                                      nccl_->path() + " is " + std::to_string(nccl_->version()));
  }
  void* sub = nullptr;
  LIGHTCC_RETURN_IF_ERROR(nccl_->check(nccl_->commSplit(comm_, color, key, &sub, nullptr), "ncclCommSplit", comm_)
                              .withContext("NCCL communicator for " + what));
  if (sub == nullptr) return Status::Internal("ncclCommSplit gave no communicator for " + what);
  // Ranks in a split communicator follow `key`; callers pass keys 0..members-1.
  out->reset(new NcclComm(nccl_, sub, members, key, stream_, what));
  return Status::OK();
}

NcclComm::~NcclComm() {
  if (comm_ == nullptr) return;
  if (aborted_) return;  // ncclCommAbort already freed it
  nccl_->commDestroy(comm_);
}

void NcclComm::abort() {
  if (comm_ == nullptr || aborted_) return;
  aborted_ = true;
  nccl_->commAbort(comm_);
}

Status NcclComm::asyncError() {
  if (comm_ == nullptr || aborted_) return Status::OK();
  int r = kNcclSuccess;
  nccl_->commGetAsyncError(comm_, &r);
  return nccl_->check(r, "NCCL", comm_).withContext(what_);
}

Status NcclComm::reduceArgs(DataType dtype, ReduceOp op, int* nd, int* nop) const {
  *nd = ncclDataType(dtype);
  if (*nd < 0) {
    return Status::InvalidArgument(std::string("NCCL cannot reduce ") + dtypeName(dtype) +
                                   " tensors; use a 32-bit integer or floating type on the GPU");
  }
  switch (op) {
    case ReduceOp::kSum: *nop = kNcclSum; break;
    case ReduceOp::kProduct: *nop = kNcclProd; break;
    case ReduceOp::kMin: *nop = kNcclMin; break;
    case ReduceOp::kMax: *nop = kNcclMax; break;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      return Status::InvalidArgument(std::string("NCCL has no bitwise reduction (") + reduceOpName(op) +
                                     "): copy GPU tensors to host memory for it (for bool, Min is and, Max is or)");
    case ReduceOp::kAverage:  // callers reduce Average as Sum, then scale
    case ReduceOp::kAdasum:
      return Status::InvalidArgument(std::string("NCCL: no element-wise op ") + reduceOpName(op));
  }
  return Status::OK();
}

Status NcclComm::allreduce(void* buf, size_t count, DataType dtype, ReduceOp op) {
  int nd, nop;
  LIGHTCC_RETURN_IF_ERROR(reduceArgs(dtype, op, &nd, &nop));
  return nccl_->check(nccl_->allReduce(buf, buf, count, nd, nop, comm_, stream_), "ncclAllReduce", comm_);
}

Status NcclComm::reduceScatter(const void* in, void* out, size_t count, DataType dtype, ReduceOp op) {
  int nd, nop;
  LIGHTCC_RETURN_IF_ERROR(reduceArgs(dtype, op, &nd, &nop));
  return nccl_->check(nccl_->reduceScatter(in, out, count, nd, nop, comm_, stream_), "ncclReduceScatter", comm_);
}

Status NcclComm::allGather(const void* in, void* out, size_t bytes) {
  return nccl_->check(nccl_->allGather(in, out, bytes, kNcclUint8, comm_, stream_), "ncclAllGather", comm_);
}

Status NcclComm::allGatherV(const void* in, void* out, const std::vector<size_t>& bytes) {
  // Uneven pieces: one broadcast per member, batched into one NCCL group.
  LIGHTCC_RETURN_IF_ERROR(nccl_->check(nccl_->groupStart(), "ncclGroupStart"));
  size_t offset = 0;
  Status st;
  for (int j = 0; j < static_cast<int>(bytes.size()); ++j) {
    char* dst = static_cast<char*>(out) + offset;
    const void* src = j == rank_ ? in : dst;
    if (bytes[j] > 0 && st.ok()) {
      st = nccl_->check(nccl_->broadcast(src, dst, bytes[j], kNcclUint8, j, comm_, stream_), "ncclBroadcast", comm_);
    }
    offset += bytes[j];
  }
  Status end = nccl_->check(nccl_->groupEnd(), "ncclGroupEnd", comm_);
  return st.ok() ? end : st;
}

Status NcclComm::broadcast(void* buf, size_t bytes, int root) {
  if (bytes == 0) return Status::OK();
  return nccl_->check(nccl_->broadcast(buf, buf, bytes, kNcclUint8, root, comm_, stream_), "ncclBroadcast", comm_);
}

Status NcclComm::alltoallV(const void* in, const std::vector<size_t>& send, void* out,
                           const std::vector<size_t>& recv) {
  LIGHTCC_RETURN_IF_ERROR(nccl_->check(nccl_->groupStart(), "ncclGroupStart"));
  Status st;
  size_t so = 0, ro = 0;
  for (int k = 0; k < static_cast<int>(send.size()) && st.ok(); ++k) {
    if (send[k] > 0) {
      st = nccl_->check(nccl_->send(static_cast<const char*>(in) + so, send[k], kNcclUint8, k, comm_, stream_),
                        "ncclSend", comm_);
    }
    if (st.ok() && recv[k] > 0) {
      st = nccl_->check(nccl_->recv(static_cast<char*>(out) + ro, recv[k], kNcclUint8, k, comm_, stream_),
                        "ncclRecv", comm_);
    }
    so += send[k];
    ro += recv[k];
  }
  Status end = nccl_->check(nccl_->groupEnd(), "ncclGroupEnd", comm_);
  return st.ok() ? end : st;
}

Status NcclComm::sendRecv(int peer, const void* send, size_t send_bytes, void* recv, size_t recv_bytes) {
  LIGHTCC_RETURN_IF_ERROR(nccl_->check(nccl_->groupStart(), "ncclGroupStart"));
  Status st;
  if (send_bytes > 0) {
    st = nccl_->check(nccl_->send(send, send_bytes, kNcclUint8, peer, comm_, stream_), "ncclSend", comm_);
  }
  if (st.ok() && recv_bytes > 0) {
    st = nccl_->check(nccl_->recv(recv, recv_bytes, kNcclUint8, peer, comm_, stream_), "ncclRecv", comm_);
  }
  Status end = nccl_->check(nccl_->groupEnd(), "ncclGroupEnd", comm_);
  return st.ok() ? end : st;
}

}  // namespace lightcc::device
