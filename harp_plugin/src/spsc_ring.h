// SpscRing: bounded lock-free single-producer/single-consumer ring of trivially copyable items.
//
// The producer is the one NCCL thread driving a comm (isend/irecv); the consumer is the engine
// instance thread serving that comm's flows on one core. Head and tail live on separate cache
// lines; the producer publishes with a release store of tail, the consumer with one of head.
#pragma once

#include <atomic>
#include <cstddef>
#include <type_traits>

namespace harp {

template <typename T, size_t kCapacity>
class SpscRing {
  static_assert((kCapacity & (kCapacity - 1)) == 0, "capacity must be a power of two");
  static_assert(std::is_trivially_copyable<T>::value, "items are copied bytewise");

 public:
  // Producer side. Returns false when full.
  bool push(const T& item) {
    size_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_cache_ == kCapacity) {
      head_cache_ = head_.load(std::memory_order_acquire);
      if (tail - head_cache_ == kCapacity) return false;
    }
    items_[tail & (kCapacity - 1)] = item;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }
  // Producer side: free slots right now (a lower bound for the consumer running concurrently).
  size_t freeSlots() {
    head_cache_ = head_.load(std::memory_order_acquire);
    return kCapacity - (tail_.load(std::memory_order_relaxed) - head_cache_);
  }
  // Consumer side. Returns false when empty.
  bool pop(T* item) {
    size_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_cache_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head == tail_cache_) return false;
    }
    *item = items_[head & (kCapacity - 1)];
    head_.store(head + 1, std::memory_order_release);
    return true;
  }
  // Either side: a racy emptiness hint used before sleeping (the caller fences first).
  bool empty() const {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
  }

 private:
  alignas(64) std::atomic<size_t> tail_{0};
  size_t head_cache_ = 0;  // producer's last view of head
  alignas(64) std::atomic<size_t> head_{0};
  size_t tail_cache_ = 0;  // consumer's last view of tail
  alignas(64) T items_[kCapacity];
};

}  // namespace harp
