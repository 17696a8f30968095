// Device pacing: how many fused GPU batches this rank has launched that the GPU has not finished.
//
// DESIGN. With LIGHT_DEVICE_INFLIGHT = N > 0, agreed GPU allreduces wait in the fusion scheduler
// while N batches are still running here, then go out fused as one. A backward pass hands the
// engine a gradient every few hundred microseconds and each NCCL call costs a round trip on the
// network, so launching each as agreed spends the step on call latency; waiting for the stream to
// drain instead fuses exactly as much as the network is behind, with no bucket size to tune. The
// hold is decided by an AND vote of every rank's count (negotiator), so the fused layout stays the
// same everywhere. Executors add each batch's `done` event from their threads; the engine thread
// counts. Queries never block.
#pragma once

#include <deque>
#include <mutex>

#include "device/device.h"

namespace lightcc {

class DeviceInflight {
 public:
  void add(device::EventPtr done);
  // Batches whose `done` event has not fired; a failed query counts as finished (the batch's
  // error reaches its handles through the executor, not through pacing).
  size_t running();
  void clear();

 private:
  std::mutex mu_;
  std::deque<device::EventPtr> events_;
};

}  // namespace lightcc
