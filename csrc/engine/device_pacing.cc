// Device pacing: counting launched GPU batches that have not finished.
#include "engine/device_pacing.h"

namespace lightcc {

void DeviceInflight::add(device::EventPtr done) {
  if (!done) return;
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(done));
}

size_t DeviceInflight::running() {
  std::lock_guard<std::mutex> lock(mu_);
  // Several streams finish out of order: look at every event, not just the oldest.
  for (auto it = events_.begin(); it != events_.end();) {
    bool done = false;
    if (!(*it)->query(&done).ok() || done) {
      it = events_.erase(it);
    } else {
      ++it;
    }
  }
  return events_.size();
}

void DeviceInflight::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
}

}  // namespace lightcc
