// TensorQueue: a mutex-guarded vector plus the set of in-flight names.
#include "engine/tensor_queue.h"

namespace lightcc {

Status TensorQueue::push(std::vector<TensorEntry> entries, bool wake) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closed_.ok()) return closed_;
    std::unordered_set<TensorKey, TensorKeyHash> fresh;
    for (const auto& e : entries) {
      auto key = std::make_pair(e.request.process_set_id, e.request.name);
      if (names_.count(key) || !fresh.insert(key).second) {
        return Status::InvalidArgument(
            "a tensor named '" + e.request.name + "' is already in flight in process set " +
            std::to_string(e.request.process_set_id) +
            "; wait for it (synchronize) or give this one another name");
      }
    }
    auto now = std::chrono::steady_clock::now();
    for (auto& e : entries) {
      names_.insert({e.request.process_set_id, e.request.name});
      e.enqueued = now;
      queue_.push_back(std::move(e));
    }
    queued_.store(queue_.size(), std::memory_order_release);
  }
  if (wake) wake_();
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
  queued_.store(0, std::memory_order_release);
}

bool TensorQueue::hasWork() const { return queued_.load(std::memory_order_acquire) != 0; }

void TensorQueue::finish(int32_t process_set_id, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  names_.erase({process_set_id, name});
}

void TensorQueue::close(const Status& status) {
  std::vector<TensorEntry> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = status;
    dropped.swap(queue_);
    queued_.store(0);
    names_.clear();
  }
  for (auto& e : dropped) e.handle->complete(status);
}

size_t TensorQueue::inFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return names_.size();
}

}  // namespace lightcc
