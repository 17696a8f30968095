// Streams (LIGHT_NUM_STREAMS): k worker threads, each running agreed batches on its own channel.
//
// DESIGN. With k > 1 the engine thread negotiates and fuses as before, then hands each agreed
// batch to stream (sequence number mod k), where the sequence number counts every response of
// the agreed plan. The plan is identical on every rank, so every rank runs the same batch on the
// same stream, and each stream runs its batches in plan order (per-stream FIFO); a batch's
// handles complete when it finishes, whatever the other streams do. A stream owns a Channel: a
// host-group view with its own doorbell, counters, meta, staging and shared-memory rings, and its
// own links (own HARP comms and flows) to every remote peer, plus its own communicators, fusion
// buffer and top-k scratch, so streams share no transport state and need no locks on the data
// path. The engine thread touches a stream only through submit() (a mutex-guarded deque plus a
// doorbell), drain() (a fence: it waits until every stream is idle) and stop().
// Errors: the first failing batch's Status is kept; the stream completes that batch's handles
// with it and fails every later batch on every stream; the engine thread sees failed() and ends,
// and stop() with that Status makes in-flight waits give up (the channels' abort flag).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <unordered_map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/batch.h"
#include "engine/channel.h"
#include "engine/executor.h"
#include "transport/shm/host_group.h"

namespace lightcc {

class Streams {
 public:
  // Counters the workers bump (the engine's stats): batches run, most batches running at once.
  struct Counters {
    std::atomic<uint64_t>* batches;
    std::atomic<uint64_t>* busy_max;
  };
  // `engine_host` is the engine thread's view, woken when a batch ends (drain() waits there).
  // Stream s runs on channels[s] (owned by the Mesh, outliving this) with executors[s].
  Streams(std::vector<Channel*> channels, std::vector<std::unique_ptr<Executor>> executors,
          const shm::HostGroup* engine_host, Counters counters);
  ~Streams();  // stops (aborting queued work) if stop() was not called
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;

  void start();
  int size() const { return static_cast<int>(workers_.size()); }
  Channel& channel(int s) { return *workers_[s]->channel; }

  // Engine thread only.
  uint64_t nextSequence() { return sequence_++; }
  void submit(int stream, Batch batch);
  // Fence: waits until every stream has run everything submitted; returns the first error.
  Status drain();
  // ok: run what is queued, then join; otherwise abort in-flight waits and fail queued batches
  // with `why`. Idempotent.
  void stop(const Status& why);
  // Any thread: in-flight waits give up with `why` and later batches fail; stop() still joins.
  void abort(const Status& why);

  bool failed() const { return failed_.load(std::memory_order_acquire); }
  Status error() const;

 private:
  struct Worker {
    Channel* channel;
    std::unique_ptr<Executor> executor;
    std::mutex mu;
    std::deque<Batch> queue;
    std::thread thread;
  };
  void work(Worker& w);
  void recordError(const Status& st);

  std::vector<std::unique_ptr<Worker>> workers_;
  const shm::HostGroup* engine_host_;
  Counters counters_;
  std::atomic<uint64_t> running_{0};
  uint64_t sequence_ = 0;
  std::atomic<int64_t> outstanding_{0};  // batches submitted and not yet finished
  std::atomic<bool> stopping_{false};
  std::atomic<bool> abort_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex error_mu_;
  Status error_;
  Status abort_status_;
};

}  // namespace lightcc
