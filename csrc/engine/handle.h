// Handle: the one async completion record shared by the engine and every front.
//
// Contract (as c10d's Work): poll() never blocks; wait() blocks, then reports the Status;
// a handle completes exactly once. The engine thread completes; caller threads poll and wait.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "device/device.h"

namespace lightcc {

// 64-byte aligned heap memory the engine allocates for outputs whose size only the collective
// knows; fronts wrap it without copying (numpy.frombuffer / torch.frombuffer).
class HostBuffer {
 public:
  explicit HostBuffer(size_t bytes);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  char* data_;
  size_t size_;
};

struct HandleResult {
  std::shared_ptr<HostBuffer> output;    // engine-allocated output, if any
  std::vector<int64_t> output_shape;     // shape of `output`
  std::vector<int64_t> received_splits;  // alltoall
  int64_t value = -1;                    // join: last rank to join; add_process_set: new id
  // GPU tensors: the op's work is enqueued, not finished, when the handle completes. `done`
  // follows it on the engine's stream; `device_output` is an engine-allocated GPU output.
  device::EventPtr done;
  device::BufferPtr device_output;
};

class Handle {
 public:
  void complete(Status status, HandleResult result = {});
  bool poll() const;
  // Spins up to spin_us (the engine usually answers within microseconds, and a futex wakeup
  // costs tens of them), then sleeps.
  Status wait(double spin_us = 0);
  // Sleeps until completion or for at most `us`; true if completed.
  bool waitFor(double us);
  // The same, also ending when `woken()` turns true; a thread that makes it true calls nudge().
  bool waitFor(double us, const std::function<bool()>& woken);
  // Has a waiter look at its `woken` condition again (does not complete the handle).
  void nudge();
  // Runs `fn` once, right after completion, on the completing thread (at once, here, when the
  // handle has completed already). It must neither block nor take the GIL: the bindings' futures
  // only post the handle to their completion queue from it.
  void onComplete(std::function<void()> fn);
  // Lock-free completion check for the engine's own progress loop.
  bool done() const { return done_flag_.load(std::memory_order_acquire); }
  // Valid after completion.
  const HandleResult& result() const { return result_; }
  // Callers about to block say so, so the engine can run a tensor it holds back for fusion.
  void addWaiter(int delta) { waiters_.fetch_add(delta); }
  bool waited() const { return waiters_.load() > 0; }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::atomic<bool> done_flag_{false};  // done_, readable without the mutex
  std::atomic<int> waiters_{0};
  Status status_;
  HandleResult result_;
  std::function<void()> on_complete_;
};

}  // namespace lightcc
