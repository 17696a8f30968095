// ResponseCache: slot vector plus name index; LRU eviction ordered by (last use, bit).
#include "engine/response_cache.h"

#include <algorithm>

namespace lightcc {

bool isCacheable(OpType op) {
  return op == OpType::kAllreduce || op == OpType::kBroadcast || op == OpType::kAllgather ||
         op == OpType::kAlltoall || op == OpType::kReducescatter;
}

int ResponseCache::find(int32_t process_set_id, const std::string& name) const {
  auto it = index_.find(std::pair<int32_t, std::string_view>(process_set_id, name));
  return it == index_.end() ? -1 : it->second;
}

bool ResponseCache::matches(int bit, const Request& local) const {
  const Slot& s = *slots_[bit];
  if (!s.has_local) return false;
  const Request& a = s.request;
  // Runs for every cached tensor every step, so it compares in place (no copies). Alltoall
  // splits may change every step without renegotiation: they travel with the data.
  return a.op == local.op && a.dtype == local.dtype && a.reduce_op == local.reduce_op && a.root == local.root &&
         a.process_set_id == local.process_set_id && a.prescale == local.prescale &&
         a.postscale == local.postscale && a.name == local.name && a.shape == local.shape &&
         (a.op == OpType::kAlltoall || a.aux == local.aux);
}

void ResponseCache::put(const Request* local, const Response& response, uint64_t cycle) {
  if (capacity_ == 0) return;
  const int32_t ps = response.process_set_id;
  const std::string& name = response.names.front();
  int bit = find(ps, name);
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
  if (local != nullptr) {
    slot.request = *local;
    slot.has_local = true;
  } else {
    slot.request.process_set_id = ps;
    slot.request.name = name;
  }
  slot.response = response;
  slot.last_used = cycle;
  slots_[bit] = std::move(slot);
  index_[{ps, name}] = bit;
  extent_ = std::max(extent_, static_cast<size_t>(bit) + 1);
}

void ResponseCache::erase(int bit) {
  if (!slots_[bit]) return;
  index_.erase({slots_[bit]->request.process_set_id, slots_[bit]->request.name});
  slots_[bit].reset();
  while (extent_ > 0 && !slots_[extent_ - 1]) --extent_;
}

void ResponseCache::clear() {
  for (auto& s : slots_) s.reset();
  index_.clear();
  extent_ = 0;
}

}  // namespace lightcc
