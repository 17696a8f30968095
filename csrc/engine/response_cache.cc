// ResponseCache: slot vector plus an id-to-bit index; LRU eviction ordered by (last use, bit).
#include "engine/response_cache.h"

#include <algorithm>

#include "engine/op_traits.h"

namespace lightcc {

bool isCacheable(OpType op) { return movesData(op); }

bool ResponseCache::matches(int bit, const Request& local) const {
  const Slot& s = *slots_[bit];
  if (!s.has_local) return false;
  const Request& a = s.request;
  // Runs for every cached tensor every step, so it compares in place (no copies). Splits
  // (alltoall's) may change every step without renegotiation: they travel with the data.
  return a.sameOp(local) && a.name == local.name && a.shape == local.shape && a.onDevice() == local.onDevice() &&
         (takesSplits(a.op) || a.aux == local.aux);
}

void ResponseCache::put(int32_t id, const Request* local, ResponsePtr response, uint64_t cycle) {
  if (capacity_ == 0 || id < 0) return;
  int bit = find(id);
  if (bit < 0) {
    for (size_t i = 0; i < capacity_; ++i) {
      if (!slots_[i]) {
        bit = static_cast<int>(i);
        break;
      }
    }
  }
  if (bit < 0) {
    uint64_t oldest = UINT64_MAX;
    for (size_t i = 0; i < capacity_; ++i) {
      if (slots_[i]->last_used < oldest) {
        oldest = slots_[i]->last_used;
        bit = static_cast<int>(i);
      }
    }
    erase(bit);
  }
  Slot slot;
  slot.id = id;
  if (local != nullptr) {
    slot.request = *local;
    slot.has_local = true;
  } else {
    slot.request.process_set_id = response->process_set_id;
    slot.request.name = response->names.front();
  }
  slot.response = std::move(response);
  slot.last_used = cycle;
  slots_[bit] = std::move(slot);
  occupied_[static_cast<size_t>(bit) / 64] |= uint64_t{1} << (bit % 64);
  ++generation_;
  if (bit_of_.size() <= static_cast<size_t>(id)) bit_of_.resize(static_cast<size_t>(id) + 1, -1);
  bit_of_[static_cast<size_t>(id)] = bit;
  extent_ = std::max(extent_, static_cast<size_t>(bit) + 1);
}

void ResponseCache::erase(int bit) {
  if (!slots_[bit]) return;
  bit_of_[static_cast<size_t>(slots_[bit]->id)] = -1;
  slots_[bit].reset();
  occupied_[static_cast<size_t>(bit) / 64] &= ~(uint64_t{1} << (bit % 64));
  ++generation_;
  while (extent_ > 0 && !slots_[extent_ - 1]) --extent_;
}

void ResponseCache::clear() {
  for (auto& s : slots_) s.reset();
  bit_of_.assign(bit_of_.size(), -1);
  occupied_.assign(occupied_.size(), 0);
  ++generation_;
  extent_ = 0;
}

}  // namespace lightcc
