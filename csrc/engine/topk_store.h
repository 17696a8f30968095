// TopkStore: top-k error-feedback state per tensor, shared by every executor and by checkpoints.
//
// DESIGN. mu_ guards the map; entries are never erased, so references stay valid, and each
// entry's own mutex guards its state. An executor holds an entry's mutex across the whole
// exchange (a tensor is in flight at most once, so no other stream waits on it); users saving,
// restoring or declaring lock entries one at a time, never the map and an entry together.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/hierarchical.h"
#include "algorithms/topk_schedule.h"
#include "common/config.h"

namespace lightcc {

class TopkStore {
 public:
  struct Entry {
    std::mutex mu;
    TopkTensorState state;
    TopkTensorOptions options;  // what a front declared (topk_schedule.h)
    TopkTrainState train;       // clipping's running norm, the last step's momentum
  };
  // What a front reads back after a step: how many top-k steps the tensor has taken, and the
  // momentum correction of the last one (the front then steps without its own momentum).
  struct Progress {
    uint64_t steps = 0;
    float momentum = 0.0f;
    uint64_t clipped = 0;
  };
  // Checkpoint names of velocities: this prefix, then the tensor's name as residuals() writes it.
  static constexpr const char* kVelocityPrefix = "velocity:";

  explicit TopkStore(const Config& config) : config_(config) {}

  Entry& entry(int32_t set, const std::string& name);
  // Residuals by tensor name ("<set id>:<name>" outside the global set), copied; with momentum
  // correction also each velocity, under kVelocityPrefix + that name.
  std::map<std::string, std::vector<float>> residuals();
  // Replaces one residual or velocity (its size must match the tensor's element count once the
  // tensor is known).
  Status setResidual(const std::string& name, const float* data, size_t count);
  void declare(int32_t set, const std::string& name, const TopkTensorOptions& options);
  Progress progress(int32_t set, const std::string& name);

 private:
  const Config& config_;
  std::mutex mu_;
  std::map<std::pair<int32_t, std::string>, Entry> entries_;
};

}  // namespace lightcc
