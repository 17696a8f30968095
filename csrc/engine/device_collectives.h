// DeviceCollectives: a device executor's allgather, broadcast, alltoall and reducescatter.
//
// Owned by its DeviceExecutor (device_executor.h) and run on that executor's thread, on its
// device's stream. Each collective runs one batch on the set's flat communicator and hands back
// the HandleResults the executor then finishes the batch with. Outputs whose size the collective
// decides (allgather and alltoall: the agreed first dims and the exchanged splits; reducescatter:
// this member's rows) come from the tensor's own framework through its OutputAllocator, asked
// once the size is known, so no device allocation (and none of cudaFree's device synchronisation)
// sits on the data path and the framework sees the memory. Scratch kept across batches (a joined
// rank's receive buffer, reducescatter's padded slots) stays the executor's, grown on demand.
#pragma once

#include <memory>
#include <vector>

#include "device/device.h"
#include "engine/executor.h"

namespace lightcc {

class DeviceCollectives {
 public:
  // `dev`: the executor's device, made on its first batch; `slots`: the executor's fusion
  // scratch, which reducescatter pads its slots in (stream order keeps the uses apart).
  DeviceCollectives(const ExecEnv& env, Channel& channel, const std::unique_ptr<device::Device>& dev,
                    device::BufferPtr& slots)
      : env_(env), channel_(channel), dev_(dev), slots_(slots) {}

  Status allgather(const Batch& b, device::Comm& flat, std::vector<HandleResult>* results);
  Status broadcast(const Batch& b, device::Comm& flat, std::vector<HandleResult>* results);
  Status alltoall(const Batch& b, device::Comm& flat, std::vector<HandleResult>* results);
  Status reducescatter(const Batch& b, device::Comm& flat, std::vector<HandleResult>* results);

 private:
  // A per-call output of `shape` for `e`: from its front's allocator, else (a caller without
  // one) the device's, counted in the engine's stats.
  Status output(const TensorEntry& e, const std::vector<int64_t>& shape, size_t bytes, device::BufferPtr* out);

  const ExecEnv& env_;
  Channel& channel_;
  const std::unique_ptr<device::Device>& dev_;
  device::BufferPtr& slots_;
  device::BufferPtr zeros_;    // a joined rank's receive buffer
  device::BufferPtr scatter_;  // reducescatter: a full slot for a member with fewer rows
};

}  // namespace lightcc
