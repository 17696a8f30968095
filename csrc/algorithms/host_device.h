// HostDevice and HostComm: the device interface on host memory, so CI runs every device schedule on a CPU.
//
// HostDevice runs each operation at once with the CPU kernels (the twins of the CUDA ones; the
// top-k ones are HostTopk, host_topk.h);
// its events are complete when made. HostComm runs the collectives over one of the engine's
// own SetComms (shared memory on one host, links across hosts), the same algorithms the host
// executor uses. Selected with LIGHTCC_DEVICE_EXECUTOR=host: host tensors then take the device
// executor's schedules instead of the host executor's.
#pragma once

#include "algorithms/set_comm.h"
#include "device/device.h"
#include "algorithms/host_topk.h"

namespace lightcc::device {

class HostDevice : public Device {
 public:
  std::string describe() const override { return "host"; }
  int ordinal() const override { return -1; }
  Status waitFor(const EventPtr& event) override { return Status::OK(); }
  Status record(EventPtr* out) override;
  Status copy(void* dst, const void* src, size_t bytes) override;
  Status zero(void* dst, size_t bytes) override;
  Status pack(void* buffer, const std::vector<Segment>& segments) override;
  Status unpack(const void* buffer, const std::vector<Segment>& segments) override;
  Status scale(void* dst, const void* src, size_t count, DataType dtype, double factor) override;
  Status divideIntegers(void* data, size_t count, DataType dtype, int64_t divisor) override;
  TopkKernels& topk() override { return topk_; }

 protected:
  Status allocate(size_t bytes, BufferPtr* out) override;

 private:
  HostTopk topk_;
};

class HostComm : public Comm {
 public:
  // `comm` must outlive this (it is the channel's, owned by the Mesh).
  explicit HostComm(SetComm& comm) : c_(comm) {}
  int size() const override { return c_.size(); }
  int rank() const override { return c_.me; }
  Status allreduce(void* buf, size_t count, DataType dtype, ReduceOp op) override;
  Status reduceScatter(const void* in, void* out, size_t count, DataType dtype, ReduceOp op) override;
  Status allGather(const void* in, void* out, size_t bytes) override;
  Status allGatherV(const void* in, void* out, const std::vector<size_t>& bytes) override;
  Status broadcast(void* buf, size_t bytes, int root) override;
  Status alltoallV(const void* in, const std::vector<size_t>& send, void* out,
                   const std::vector<size_t>& recv) override;
  Status sendRecv(int peer, const void* send, size_t send_bytes, void* recv, size_t recv_bytes) override;
  void abort() override {}
  Status asyncError() override { return Status::OK(); }

 private:
  SetComm& c_;
};

}  // namespace lightcc::device
