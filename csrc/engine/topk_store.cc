// TopkStore: lookups, declarations from the fronts, and copying state out and in for checkpoints.
#include "engine/topk_store.h"

#include <algorithm>

namespace lightcc {
namespace {

// "<set id>:<name>" (as residuals() writes names outside the global set) or a bare name.
std::pair<int32_t, std::string> parseKey(const std::string& name) {
  auto colon = name.find(':');
  if (colon != std::string::npos && colon > 0 && name.find_first_not_of("0123456789") == colon) {
    return {std::stoi(name.substr(0, colon)), name.substr(colon + 1)};
  }
  return {0, name};
}

}  // namespace

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
    // A declared tensor that never ran has no state to save (and none to restore into).
    if (e->state.residual.empty() && e->state.steps == 0) continue;
    out[name] = e->state.residual;
    if (!e->state.velocity.empty()) out[kVelocityPrefix + name] = e->state.velocity;
  }
  return out;
}

Status TopkStore::setResidual(const std::string& name, const float* data, size_t count) {
  const std::string prefix = kVelocityPrefix;
  const bool velocity = name.compare(0, prefix.size(), prefix) == 0;
  const auto key = parseKey(velocity ? name.substr(prefix.size()) : name);
  Entry& e = entry(key.first, key.second);
  std::lock_guard<std::mutex> lock(e.mu);
  TopkTensorState& state = e.state;
  std::vector<float>& target = velocity ? state.velocity : state.residual;
  const std::vector<float>& sized = state.residual.empty() ? state.velocity : state.residual;
  if (!sized.empty() && sized.size() != count) {
    return Status::InvalidArgument("top-k " + std::string(velocity ? "velocity" : "residual") + " for '" + name +
                                   "' has " + std::to_string(sized.size()) + " elements, not " +
                                   std::to_string(count));
  }
  target.assign(data, data + count);
  if (!velocity && config_.topk.momentum > 0 && state.velocity.size() != count) state.velocity.assign(count, 0.0f);
  state.steps = std::max<uint64_t>(state.steps, topkRestoredSteps(config_));
  return Status::OK();
}

void TopkStore::declare(int32_t set, const std::string& name, const TopkTensorOptions& options) {
  Entry& e = entry(set, name);
  std::lock_guard<std::mutex> lock(e.mu);
  e.options = options;
  e.options.declared = true;
}

TopkStore::Progress TopkStore::progress(int32_t set, const std::string& name) {
  Entry& e = entry(set, name);
  std::lock_guard<std::mutex> lock(e.mu);
  return {e.state.steps, e.train.applied_momentum, e.train.clipped};
}

}  // namespace lightcc
