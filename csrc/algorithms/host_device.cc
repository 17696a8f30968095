// HostDevice and HostComm: device operations run at once on host memory with the CPU kernels.
#include "algorithms/host_device.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "algorithms/collectives.h"
#include "kernels/reduce.h"

namespace lightcc::device {
namespace {

class HostMemory : public Buffer {
 public:
  explicit HostMemory(size_t bytes) : bytes_(bytes) {
    // 64-byte aligned as the engine's own buffers, and never null (zero-byte tensors too).
    data_ = std::aligned_alloc(64, ((bytes + 63) / 64 + 1) * 64);
  }
  ~HostMemory() override { std::free(data_); }
  void* data() const override { return data_; }
  size_t size() const override { return bytes_; }
  int device() const override { return -1; }
  Status download(void* host, size_t bytes) const override {
    if (bytes > 0) std::memcpy(host, data_, bytes);
    return Status::OK();
  }
  Status upload(const void* host, size_t bytes) override {
    if (bytes > 0) std::memcpy(data_, host, bytes);
    return Status::OK();
  }

 private:
  void* data_;
  size_t bytes_;
};

class DoneEvent : public Event {
 public:
  Status query(bool* done) override {
    *done = true;
    return Status::OK();
  }
  Status synchronize() override { return Status::OK(); }
  Status orderStream(void*) override { return Status::OK(); }
};

ReduceSpec plainSpec(DataType dtype, ReduceOp op) { return ReduceSpec{dtype, op, 1.0, 1.0}; }

}  // namespace

Status HostDevice::allocate(size_t bytes, BufferPtr* out) {
  auto b = std::make_shared<HostMemory>(bytes);
  if (b->data() == nullptr) return Status::SystemError("host: cannot allocate " + std::to_string(bytes) + " bytes");
  *out = std::move(b);
  return Status::OK();
}

Status HostDevice::record(EventPtr* out) {
  *out = std::make_shared<DoneEvent>();
  return Status::OK();
}

Status HostDevice::copy(void* dst, const void* src, size_t bytes) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
  return Status::OK();
}

Status HostDevice::zero(void* dst, size_t bytes) {
  if (bytes > 0) std::memset(dst, 0, bytes);
  return Status::OK();
}

Status HostDevice::pack(void* buffer, const std::vector<Segment>& segments) {
  auto* b = static_cast<char*>(buffer);
  for (const auto& s : segments) {
    if (s.ptr == nullptr) {
      std::memset(b + s.offset, 0, s.bytes);
    } else if (s.bytes > 0 && s.ptr != b + s.offset) {
      std::memcpy(b + s.offset, s.ptr, s.bytes);
    }
  }
  return Status::OK();
}

Status HostDevice::unpack(const void* buffer, const std::vector<Segment>& segments) {
  const auto* b = static_cast<const char*>(buffer);
  for (const auto& s : segments) {
    if (s.ptr != nullptr && s.bytes > 0 && s.ptr != b + s.offset) std::memcpy(s.ptr, b + s.offset, s.bytes);
  }
  return Status::OK();
}

Status HostDevice::scale(void* dst, const void* src, size_t count, DataType dtype, double factor) {
  kernels::scale(dst, src, count, dtype, factor);
  return Status::OK();
}

Status HostDevice::divideIntegers(void* data, size_t count, DataType dtype, int64_t divisor) {
  kernels::divideIntegers(data, count, dtype, divisor);
  return Status::OK();
}

Status HostComm::allreduce(void* buf, size_t count, DataType dtype, ReduceOp op) {
  if (c_.size() == 1 || count == 0) return Status::OK();
  const ReduceSpec spec = plainSpec(dtype, op);
  if (c_.all_local) {
    IoVec io;
    io.add(buf, buf, count * dtypeSize(dtype));
    return shmAllreduce(c_, io, spec);
  }
  return ringAllreduce(c_, buf, count, spec);
}

Status HostComm::reduceScatter(const void* in, void* out, size_t count, DataType dtype, ReduceOp op) {
  if (c_.size() == 1) {
    if (count > 0 && in != out) std::memcpy(out, in, count * dtypeSize(dtype));
    return Status::OK();
  }
  const std::vector<int64_t> rows(c_.size(), static_cast<int64_t>(count));
  const ReduceSpec spec = plainSpec(dtype, op);
  return c_.all_local ? shmReducescatter(c_, in, out, rows, 1, spec) : ringReducescatter(c_, in, out, rows, 1, spec);
}

Status HostComm::allGather(const void* in, void* out, size_t bytes) {
  return allGatherV(in, out, std::vector<size_t>(c_.size(), bytes));
}

Status HostComm::allGatherV(const void* in, void* out, const std::vector<size_t>& bytes) {
  if (c_.size() == 1) {
    if (bytes[0] > 0 && in != out) std::memcpy(out, in, bytes[0]);
    return Status::OK();
  }
  return c_.all_local ? shmAllgather(c_, in, bytes, out) : ringAllgather(c_, in, bytes, out);
}

Status HostComm::broadcast(void* buf, size_t bytes, int root) {
  if (c_.size() == 1) return Status::OK();
  return c_.all_local ? shmBroadcast(c_, buf, buf, bytes, root) : chainBroadcast(c_, buf, bytes, root);
}

Status HostComm::alltoallV(const void* in, const std::vector<size_t>& send, void* out,
                           const std::vector<size_t>& recv) {
  if (c_.size() == 1) {
    if (send[0] > 0) std::memcpy(out, in, send[0]);
    return Status::OK();
  }
  // The host algorithms need the whole matrix (each reads its peers' offsets): exchange it.
  std::vector<int64_t> mine(send.begin(), send.end());
  SplitMatrix matrix;
  LIGHTCC_RETURN_IF_ERROR(c_.all_local ? shmExchangeSplits(c_, mine, &matrix) : linkExchangeSplits(c_, mine, &matrix));
  return c_.all_local ? shmAlltoallData(c_, in, 1, matrix, out) : linkAlltoallData(c_, in, 1, matrix, out);
}

Status HostComm::sendRecv(int peer, const void* send, size_t send_bytes, void* recv, size_t recv_bytes) {
  std::vector<P2POp> ops;
  if (send_bytes > 0) ops.push_back({c_.link(peer), true, const_cast<void*>(send), send_bytes});
  if (recv_bytes > 0) ops.push_back({c_.link(peer), false, recv, recv_bytes});
  return runP2P(c_, ops, "exchange with rank " + std::to_string(c_.ranks[peer]));
}

}  // namespace lightcc::device
