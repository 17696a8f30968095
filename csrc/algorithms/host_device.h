// HostDevice and HostComm: the device interface on host memory, so CI runs every device schedule on a CPU.
//
// HostDevice runs each operation at once with the CPU kernels (the twins of the CUDA ones);
// its events are complete when made. HostComm runs the collectives over one of the engine's
// own SetComms (shared memory on one host, links across hosts), the same algorithms the host
// executor uses. Selected with LIGHTCC_DEVICE_EXECUTOR=host: host tensors then take the device
// executor's schedules instead of the host executor's.
#pragma once

#include "algorithms/set_comm.h"
#include "device/device.h"
#include "kernels/topk.h"

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
  size_t topkWorkspaceBytes(size_t count) override { return 0; }
  Status selectTopk(const float* values, size_t count, size_t k, uint32_t* indices, float* selected,
                    void* workspace, size_t workspace_bytes) override;
  Status scatterAddRanks(float* dst, size_t count, const std::vector<const uint32_t*>& indices,
                         const std::vector<const void*>& values, DataType dtype, size_t k) override;
  Status accumulateResidual(float* residual, const void* grad, DataType dtype, size_t count,
                            float scale) override;
  Status clearSelected(float* residual, const uint32_t* indices, size_t k) override;
  Status momentumCorrect(float* u, float* v, const void* grad, DataType dtype, size_t count,
                         float momentum) override;
  Status dgcAccumulate(float* u, float* v, const void* grad, DataType dtype, size_t count, float scale,
                       float momentum, bool nesterov) override;
  Status roundSelected(float* residual, const uint32_t* indices, const float* selected, void* wire, DataType dtype,
                       size_t k) override;
  Status fromFloat(void* dst, const float* src, size_t count, DataType dtype) override;
  Status mergeUnion(const uint32_t* a_idx, const void* a_val, const uint32_t* b_idx, const void* b_val, size_t n,
                    DataType dtype, uint32_t* slot_idx, float* slot_val, float* slot_rank) override;
  Status gatherSlots(const uint32_t* slot_idx, const float* slot_val, const uint32_t* pos, size_t k, DataType dtype,
                     uint32_t* out_idx, void* out_val) override;
  Status markDropped(const uint32_t* list, size_t n, const uint32_t* watched, size_t m, uint8_t* dropped) override;
  Status offsetIndices(uint32_t* idx, size_t n, uint32_t offset) override;
  Status restoreDropped(float* residual, const uint32_t* idx, const void* val, DataType dtype, const uint8_t* dropped,
                        size_t n) override;
  Status placePairs(void* out, size_t count, DataType dtype, const uint32_t* idx, const void* val,
                    size_t n) override;

 protected:
  Status allocate(size_t bytes, BufferPtr* out) override;

 private:
  kernels::TopkScratch scratch_;
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
