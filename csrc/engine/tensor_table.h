// TensorTable: the engine's tensors by small integer id — interned (process set, name) and each one's pending entry.
//
// DESIGN. Engine thread only. A (set, name) is hashed once when its entry is classified; after
// that the cycle, the response cache (which keys its slots by id) and the executor address the
// tensor by id, so the steady-state path builds no key strings and allocates no node per tensor.
// Slots live in a deque so the names the index views never move. Ids of tensors neither pending
// nor wanted by the caller's `keep` are recycled by collect(), which the engine runs only when
// the table has grown well past what it needs (names unique per step would otherwise pile up).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/tensor_key.h"
#include "engine/tensor_queue.h"

namespace lightcc {

using TensorId = int32_t;

class TensorTable {
 public:
  // kCached: announced through its cache bit; kToSend: goes to the coordinator next slow path;
  // kSubmitted: already sent or agreed, waiting for the agreed response to run.
  enum class State : uint8_t { kCached, kToSend, kSubmitted };
  struct Slot {
    int32_t set = 0;
    std::string name;
    bool pending = false;
    State state = State::kToSend;
    int bit = -1;        // with kCached: the cache bit it announces
    TensorEntry entry;   // valid while pending
  };

  // Id of (set, name), or -1 if it was never interned (or has been recycled).
  TensorId find(int32_t set, std::string_view name) const;
  TensorId intern(int32_t set, std::string_view name);
  Slot& at(TensorId id) { return slots_[static_cast<size_t>(id)]; }
  const Slot& at(TensorId id) const { return slots_[static_cast<size_t>(id)]; }

  // Pending entries, in no particular order (removal swaps the last one into the gap).
  void addPending(TensorId id, TensorEntry entry, State state, int bit);
  TensorEntry takePending(TensorId id);
  const std::vector<TensorId>& pending() const { return pending_; }
  bool anyPending() const { return !pending_.empty(); }
  // Pending entries in state kToSend, kept as a count so each cycle need not scan for them.
  bool anyToSend() const { return to_send_ > 0; }
  void setState(TensorId id, State state);

  // Ids in use (interned and not recycled).
  size_t live() const { return slots_.size() - free_.size(); }
  // Recycles every id that is not pending and for which keep(id) is false.
  void collect(const std::function<bool(TensorId)>& keep);

 private:
  std::deque<Slot> slots_;
  std::vector<size_t> pending_pos_;  // by id: index in pending_ while pending
  std::vector<TensorId> free_;
  std::vector<TensorId> pending_;
  size_t to_send_ = 0;
  // Keys view the slot's own name, so a lookup with a caller's string_view allocates nothing.
  std::unordered_map<std::pair<int32_t, std::string_view>, TensorId, TensorKeyHash> index_;
};

}  // namespace lightcc
