// TopkStore: lookups, and copying residuals out and in for checkpoints.
#include "engine/topk_store.h"

#include <algorithm>

#include "algorithms/topk_schedule.h"

namespace lightcc {

TopkStore::Entry& TopkStore::entry(int32_t set, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_[{set, name}];
}

std::map<std::string, std::vector<float>> TopkStore::residuals() {
  // Collect the entries first and lock each alone, so a caller never holds the map while a
  // stream holds an entry through an exchange (streams need the map to find their entries).
  std::vector<std::pair<std::string, Entry*>> entries;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, e] : entries_) {
      entries.emplace_back(key.first == 0 ? key.second : std::to_string(key.first) + ":" + key.second, &e);
    }
  }
  std::map<std::string, std::vector<float>> out;
  for (auto& [name, e] : entries) {
    std::lock_guard<std::mutex> lock(e->mu);
    out[name] = e->state.residual;
  }
  return out;
}

Status TopkStore::setResidual(const std::string& name, const float* data, size_t count) {
  std::pair<int32_t, std::string> key{0, name};
  auto colon = name.find(':');
  if (colon != std::string::npos && colon > 0 && name.find_first_not_of("0123456789") == colon) {
    key = {std::stoi(name.substr(0, colon)), name.substr(colon + 1)};
  }
  Entry& e = entry(key.first, key.second);
  std::lock_guard<std::mutex> lock(e.mu);
  TopkTensorState& state = e.state;
  if (!state.residual.empty() && state.residual.size() != count) {
    return Status::InvalidArgument("top-k residual for '" + name + "' has " + std::to_string(state.residual.size()) +
                                   " elements, not " + std::to_string(count));
  }
  state.residual.assign(data, data + count);
  if (config_.topk_momentum > 0 && state.velocity.size() != count) state.velocity.assign(count, 0.0f);
  state.steps = std::max<uint64_t>(state.steps, topkRestoredSteps(config_));
  return Status::OK();
}

}  // namespace lightcc
