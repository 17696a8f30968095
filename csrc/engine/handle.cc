// Handle: completion under a mutex, waiting on a condition variable.
#include "engine/handle.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

namespace lightcc {

HostBuffer::HostBuffer(size_t bytes) : size_(bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  data_ = static_cast<char*>(std::aligned_alloc(64, rounded == 0 ? 64 : rounded));
  if (data_ == nullptr) throw std::bad_alloc();
}

HostBuffer::~HostBuffer() { std::free(data_); }

void Handle::complete(Status status, HandleResult result) {
  std::function<void()> then;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    status_ = std::move(status);
    result_ = std::move(result);
    done_ = true;
    done_flag_.store(true, std::memory_order_release);
    then.swap(on_complete_);
  }
  cv_.notify_all();
  if (then) then();
}

void Handle::onComplete(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) {
      on_complete_ = std::move(fn);
      return;
    }
  }
  fn();
}

bool Handle::poll() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

Status Handle::wait(double spin_us) {
  if (spin_us > 0 && !done_flag_.load(std::memory_order_acquire)) {
    auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(spin_us * 1e3));
    while (!done_flag_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < end) {
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_; });
  return status_;
}

bool Handle::waitFor(double us) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::nanoseconds(static_cast<int64_t>(us * 1e3)), [this] { return done_; });
}

bool Handle::waitFor(double us, const std::function<bool()>& woken) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::nanoseconds(static_cast<int64_t>(us * 1e3)), [&] { return done_ || woken(); });
  return done_;
}

void Handle::nudge() {
  {
    // Taken and released so a waiter is either before its check of `woken` or asleep in wait_for.
    std::lock_guard<std::mutex> lock(mu_);
  }
  cv_.notify_all();
}

}  // namespace lightcc
