// TopkStore: top-k error-feedback state per tensor, shared by every executor and by checkpoints.
//
// DESIGN. mu_ guards the map; entries are never erased, so references stay valid, and each
// entry's own mutex guards its state. An executor holds an entry's mutex across the whole
// exchange (a tensor is in flight at most once, so no other stream waits on it); users saving or
// restoring residuals lock entries one at a time, never the map and an entry together.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/hierarchical.h"
#include "common/config.h"

namespace lightcc {

class TopkStore {
 public:
  struct Entry {
    std::mutex mu;
    TopkTensorState state;
  };
  explicit TopkStore(const Config& config) : config_(config) {}

  Entry& entry(int32_t set, const std::string& name);
  // Residuals by tensor name ("<set id>:<name>" outside the global set), copied.
  std::map<std::string, std::vector<float>> residuals();
  // Replaces one (its size must match the tensor's element count once the tensor is known).
  Status setResidual(const std::string& name, const float* data, size_t count);

 private:
  const Config& config_;
  std::mutex mu_;
  std::map<std::pair<int32_t, std::string>, Entry> entries_;
};

}  // namespace lightcc
