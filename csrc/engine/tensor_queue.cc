// TensorQueue: a mutex-guarded vector plus the table of in-flight names.
#include "engine/tensor_queue.h"

#include <iterator>

namespace lightcc {

Status TensorQueue::push(std::vector<TensorEntry> entries, bool wake) {
  bool ring = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closed_.ok()) return closed_;
    // Marks names in flight as it checks them (which also catches a name twice in one group);
    // on a duplicate it unmarks this group's names again, so a refused group leaves no trace.
    marked_.clear();
    for (const auto& e : entries) {
      probe_.first = e.request.process_set_id;
      probe_.second.assign(e.request.name);
      auto it = names_.find(probe_);
      if (it == names_.end()) it = names_.emplace(probe_, false).first;
      if (it->second) {
        for (bool* m : marked_) *m = false;
        return Status::InvalidArgument(
            "a tensor named '" + e.request.name + "' is already in flight in process set " +
            std::to_string(e.request.process_set_id) +
            "; wait for it (synchronize) or give this one another name");
      }
      it->second = true;
      marked_.push_back(&it->second);  // element pointers survive rehashing
    }
    in_flight_ += entries.size();
    // Only the first async push since the engine last drained rings: the engine drains the whole
    // queue when it runs, so later pushes ride on that wake-up (a backward pass submitting many
    // tensors then wakes the engine thread once per cycle, not once per tensor).
    ring = wake && undriven_.load(std::memory_order_relaxed) == 0;
    auto now = std::chrono::steady_clock::now();
    for (auto& e : entries) {
      e.enqueued = now;
      queue_.push_back(std::move(e));
    }
    if (wake) undriven_.fetch_add(entries.size(), std::memory_order_relaxed);
    queued_.store(queue_.size(), std::memory_order_release);
  }
  if (ring) wake_();
  return Status::OK();
}

void TensorQueue::drain(std::vector<TensorEntry>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (out->empty()) {
    // Swapping hands the engine this batch and the queue the engine's emptied buffer, so in the
    // steady state neither side reallocates.
    out->swap(queue_);
  } else {
    for (auto& e : queue_) out->push_back(std::move(e));
  }
  queue_.clear();
  undriven_.store(0, std::memory_order_relaxed);
  queued_.store(0, std::memory_order_release);
}

bool TensorQueue::hasWork() const { return queued_.load(std::memory_order_acquire) != 0; }

bool TensorQueue::hasUndrivenWork() const {
  return queued_.load(std::memory_order_acquire) != 0 && undriven_.load(std::memory_order_relaxed) != 0;
}

void TensorQueue::finish(int32_t process_set_id, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  probe_.first = process_set_id;
  probe_.second.assign(name);
  auto it = names_.find(probe_);
  if (it == names_.end() || !it->second) return;
  it->second = false;
  --in_flight_;
  if (names_.size() > 1024 + 2 * in_flight_) prune();
}

void TensorQueue::prune() {
  for (auto it = names_.begin(); it != names_.end();) {
    it = it->second ? std::next(it) : names_.erase(it);
  }
}

void TensorQueue::close(const Status& status) {
  std::vector<TensorEntry> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = status;
    dropped.swap(queue_);
    queued_.store(0);
    undriven_.store(0);
    names_.clear();
    in_flight_ = 0;
  }
  for (auto& e : dropped) e.handle->complete(status);
}

size_t TensorQueue::inFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

bool TensorQueue::inFlight(int32_t process_set_id, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (in_flight_ == 0) return false;
  auto it = names_.find(TensorKey(process_set_id, name));
  return it != names_.end() && it->second;
}

Status TensorQueue::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

}  // namespace lightcc
