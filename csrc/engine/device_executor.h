// DeviceExecutor: runs agreed batches of GPU tensors — fusion, 2D, top-k, every collective — on its own stream.
//
// DESIGN. One per channel, beside the HostExecutor (RoutingExecutor picks per batch). It never
// waits on the device: each batch's stream waits for the events recorded on the callers'
// streams when they submitted, its kernels and collectives are enqueued on the executor's own
// stream, and the handles complete with a `done` event that the front orders the caller's
// stream after (or polls). pickAlgorithm() (executor.h) decides an allreduce's schedule, as for
// the host; the schedules live beside the host ones in csrc/algorithms (device_allreduce.h,
// device_topk.h), written against device::Device and device::Comm (device/device.h): CUDA
// kernels + NCCL on a GPU, or the host implementation, which LIGHTCC_DEVICE_EXECUTOR=host
// selects for CPU tensors so CI runs every schedule. Outputs whose size the collective decides
// come from the tensor's framework (device::OutputAllocator, asked once the size is agreed); the
// executor allocates only the scratch it keeps across batches (device_collectives.h).
//
// Communicators are made on first use per process set and channel: member 0 of the set draws
// an NCCL unique id and broadcasts it over the set's own (authenticated) host communicator,
// then every member joins. LIGHT_2D_ALLREDUCE splits it into the group (LIGHT_INTRA_SIZE
// consecutive members) and the cross-group communicator of the members holding the same shard.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <utility>

#include "algorithms/device_topk.h"
#include "device/device.h"
#include "engine/device_collectives.h"
#include "engine/executor.h"

namespace lightcc {

// Top-k error feedback for device tensors: one residual per (set, tensor) in device memory,
// shared by every channel's executor, since a tensor may run on another stream next step.
class DeviceTopkStore {
 public:
  struct Entry {
    std::mutex mu;  // held while a step enqueues its work on the residual
    device::BufferPtr residual;
    device::BufferPtr velocity;
    size_t count = 0;     // residual length (padded to the 2D group size)
    size_t elements = 0;  // the tensor's own element count
    uint64_t steps = 0;
    device::EventPtr last;  // after the last step's work on the residual (its stream may differ)
  };
  Entry& entry(int32_t set, const std::string& name);
  void clear();
  // For checkpoints, as TopkStore: residuals copied to the host by name ("<set>:<name>" outside
  // the global set) once their last step has finished; set replaces one a GPU tensor already has
  // (false: no such tensor yet, the host store keeps it until the tensor first runs).
  Status residuals(std::map<std::string, std::vector<float>>* out);
  void dropSet(int32_t set);  // a removed process set's residuals
  Status setResidual(const std::string& name, const float* data, size_t count, uint64_t warmup_steps, bool* found);

 private:
  std::mutex mu_;
  std::map<std::pair<int32_t, std::string>, std::unique_ptr<Entry>> entries_;
};

class DeviceExecutor : public Executor {
 public:
  enum class Backend { kCuda, kHost };
  DeviceExecutor(const ExecEnv& env, Channel& channel, Backend backend)
      : env_(env), channel_(channel), backend_(backend), collectives_(env, channel, dev_, fusion_) {}
  ~DeviceExecutor() override;

  Status run(Batch& b) override;
  void fail(Batch& b, const Status& st) override;
  void abort() override;
  void dropSet(int32_t set) override;

 private:
  friend struct OpRuns;  // engine/op_runs.h: which of the bodies below runs each op
  struct SetComms {
    std::unique_ptr<device::Comm> flat;
    std::unique_ptr<device::Comm> intra;  // LIGHT_2D_ALLREDUCE: my group
    std::unique_ptr<device::Comm> cross;  // LIGHT_2D_ALLREDUCE: my shard's holders in every group
  };
  Status ready(const Batch& b);
  Status commsFor(int32_t set, SetComms** out);
  Status makeCudaComms(int32_t set, SetComms* c);
  Status grow(device::BufferPtr* buf, size_t bytes);
  void complete(Batch& b, size_t index, const Status& st, HandleResult result = {});
  Status finish(Batch& b, std::vector<HandleResult> results);

  // The allreduce rows of pickAlgorithm(): flat or 2D dense, flat or 2D top-k (device_topk.h).
  // Runs `b` with its op's body; defined beside the table, in engine/op_runs.cc.
  Status runOp(Batch& b, SetComms& c);
  Status allreduce(Batch& b, SetComms& c, Algorithm algo);
  Status topk(Batch& b, SetComms& c, Algorithm algo);
  // A top-k batch's tensors end to end in one index space, a segment each (the host's TopkBatch):
  // a lone tensor works in its own buffers and residual, a fused batch in staged copies, each
  // tensor's state staying in its own entry between steps.
  struct TopkWork {
    SparseLayout layout;
    TopkParams params;  // the first tensor's
    bool dense = false, momentum = false, fused = false;
    std::vector<DeviceTopkStore::Entry*> entries;
    std::vector<std::unique_lock<std::mutex>> locks;  // a tensor is in flight at most once
    size_t padded = 0;
    void* work = nullptr;  // fusion scratch of `padded` elements
    const void* in = nullptr;
    void* out = nullptr;
    DeviceTopkResidual state;
    std::vector<device::Segment> out_segs;
  };
  // Locks and prepares every tensor of the batch and reads its step into `w` (g: the 2D group size).
  Status gatherTopk(const Batch& b, size_t g, TopkWork* w);
  // Points `w` at the batch's input, output and state: the tensor's own, or staged copies.
  Status stageTopk(const Batch& b, TopkWork* w);
  // A fused batch's results (`outputs`: false when a dense allreduce wrote them) and state back to
  // its tensors; then every residual's event.
  Status unstageTopk(TopkWork& w, bool outputs);
  // The tensor's residual sized for `padded` floats, taken over from a checkpoint when one waits.
  Status prepareResidual(DeviceTopkStore::Entry& e, int32_t set, const std::string& name, size_t count, size_t padded);
  // A tensor's step (topk_schedule.h) from the host store's declarations; its velocity when due.
  Status topkStep(DeviceTopkStore::Entry& e, int32_t set, const std::string& name, TopkStep* step);
  // A dense step of tensors with momentum correction (the host's denseFromResiduals): each
  // contribution joins velocity and residual, the residuals go out whole in float32 and empty.
  // Does not complete the batch.
  Status denseFromResidual(SetComms& c, const SparseLayout& layout, const DeviceTopkResidual& state,
                           const ReduceSpec& spec, bool two_level, const void* in, void* out, size_t padded);
  const ExecEnv& env_;
  Channel& channel_;
  Backend backend_;
  std::unique_ptr<device::Device> dev_;
  std::map<int32_t, SetComms> comms_;
  // Scratch on the device, grown on demand and reused batch after batch (stream order keeps
  // one batch's use from overlapping the next's).
  // Per-call outputs are never among them: they come from the tensor's framework (output()).
  device::BufferPtr fusion_, shard_, dense_;
  device::BufferPtr staged_residual_, staged_velocity_;  // a fused top-k batch's state, end to end
  DeviceTopkScratch topk_scratch_;
  DeviceCollectives collectives_;  // allgather, broadcast, alltoall, reducescatter
};

// The executor a channel runs: device batches (GPU tensors, or every batch the device schedules
// cover under LIGHTCC_DEVICE_EXECUTOR=host) to a DeviceExecutor made on first use, the rest to
// the HostExecutor.
class RoutingExecutor : public Executor {
 public:
  RoutingExecutor(const ExecEnv& env, Channel& channel) : env_(env), channel_(channel), host_(env, channel) {}
  Status run(Batch& b) override;
  void fail(Batch& b, const Status& st) override;
  void abort() override;
  void dropSet(int32_t set) override;
  HostExecutor& host() { return host_; }

 private:
  Executor& pick(const Batch& b);
  const ExecEnv& env_;
  Channel& channel_;
  HostExecutor host_;
  std::unique_ptr<DeviceExecutor> device_;    // GPU tensors (CUDA + NCCL)
  std::unique_ptr<DeviceExecutor> emulated_;  // LIGHTCC_DEVICE_EXECUTOR=host: CPU tensors
};

}  // namespace lightcc
