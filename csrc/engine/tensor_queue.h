// TensorQueue: where caller threads leave work for the engine thread, with in-flight name checks.
//
// DESIGN. Caller threads push(); the engine thread drain()s. A name stays "in flight" (per
// process set) from push until the engine calls finish(), so a second op with the same name is
// refused at once with InvalidArgument. After close(status), every push fails with that status.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/handle.h"
#include "engine/tensor_key.h"
#include "engine/request.h"

namespace lightcc {

struct TensorEntry {
  Request request;
  const void* input = nullptr;
  void* output = nullptr;  // null when the engine allocates the output
  std::shared_ptr<Handle> handle;
  // GPU tensors: recorded on the caller's stream at submission; the engine's stream waits for it.
  device::EventPtr ready;
  // Outputs the collective sizes (allgather, alltoall, reducescatter) on a device executor: made
  // by the front's framework allocator (null: the executor allocates them itself).
  device::OutputAllocatorPtr allocate_output;
  std::chrono::steady_clock::time_point enqueued;
};

class TensorQueue {
 public:
  explicit TensorQueue(std::function<void()> wake) : wake_(std::move(wake)) {}

  // All-or-nothing: a group is queued together so it lands in one negotiation cycle.
  Status push(std::vector<TensorEntry> entries, bool wake = true);
  // Appends the queued entries to `out` (takes them without copying when `out` is empty).
  void drain(std::vector<TensorEntry>* out);
  bool hasWork() const;
  // Work no caller will drive: entries pushed with wake (async ops). Entries pushed without
  // wake belong to a caller about to wait on them and run the engine itself, so the engine
  // thread leaves them alone unless it is running anyway.
  bool hasUndrivenWork() const;
  void finish(int32_t process_set_id, const std::string& name);
  void close(const Status& status);
  // Number of names in flight (queued or being negotiated/executed).
  size_t inFlight() const;
  // Is this name in flight? (The direct path leaves such a tensor to push(), which refuses it.)
  bool inFlight(int32_t process_set_id, const std::string& name) const;
  // The queue's closing status (OK while open).
  Status closed() const;

 private:
  mutable std::mutex mu_;
  std::vector<TensorEntry> queue_;
  std::atomic<size_t> queued_{0};  // lets the engine poll without the mutex
  std::atomic<size_t> undriven_{0};  // of which pushed with wake
  // Every name seen recently, true while in flight. Finished names keep their node, so a name
  // reused every step costs no allocation; prune() drops them once they far outnumber the
  // names in flight (names unique per step would otherwise pile up).
  std::unordered_map<TensorKey, bool, TensorKeyHash> names_;
  size_t in_flight_ = 0;
  TensorKey probe_;  // lookup key, reused so a lookup does not allocate
  std::vector<bool*> marked_;  // push(): the names it marked so far
  void prune();      // needs mu_
  Status closed_;
  std::function<void()> wake_;
};

}  // namespace lightcc
