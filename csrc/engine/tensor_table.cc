// TensorTable: interning, the pending list with O(1) removal, and id recycling.
#include "engine/tensor_table.h"

namespace lightcc {

TensorId TensorTable::find(int32_t set, std::string_view name) const {
  auto it = index_.find({set, name});
  return it == index_.end() ? -1 : it->second;
}

TensorId TensorTable::intern(int32_t set, std::string_view name) {
  TensorId id = find(set, name);
  if (id >= 0) return id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<TensorId>(slots_.size());
    slots_.emplace_back();
    pending_pos_.push_back(0);
  }
  Slot& s = at(id);
  s.set = set;
  s.name.assign(name);
  index_.emplace(std::make_pair(set, std::string_view(s.name)), id);
  return id;
}

void TensorTable::addPending(TensorId id, TensorEntry entry, State state, int bit) {
  Slot& s = at(id);
  if (s.pending) takePending(id);  // cannot happen while the queue refuses duplicate names
  s.pending = true;
  s.state = state;
  s.bit = bit;
  s.entry = std::move(entry);
  if (state == State::kToSend) ++to_send_;
  pending_pos_[static_cast<size_t>(id)] = pending_.size();
  pending_.push_back(id);
}

TensorEntry TensorTable::takePending(TensorId id) {
  Slot& s = at(id);
  if (s.state == State::kToSend) --to_send_;
  s.pending = false;
  s.state = State::kToSend;
  s.bit = -1;
  const size_t pos = pending_pos_[static_cast<size_t>(id)];
  const TensorId last = pending_.back();
  pending_[pos] = last;
  pending_pos_[static_cast<size_t>(last)] = pos;
  pending_.pop_back();
  return std::move(s.entry);
}

void TensorTable::setState(TensorId id, State state) {
  Slot& s = at(id);
  if (s.state == State::kToSend) --to_send_;
  if (state == State::kToSend) ++to_send_;
  s.state = state;
}

void TensorTable::collect(const std::function<bool(TensorId)>& keep) {
  for (size_t i = 0; i < slots_.size(); ++i) {
    const TensorId id = static_cast<TensorId>(i);
    Slot& s = slots_[i];
    if (s.set < 0) continue;  // already free
    if (s.pending || keep(id)) continue;
    index_.erase({s.set, std::string_view(s.name)});
    s.set = -1;
    s.name.clear();
    s.name.shrink_to_fit();
    free_.push_back(id);
  }
}

}  // namespace lightcc
