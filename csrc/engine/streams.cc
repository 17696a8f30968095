// Streams: the worker loop, submission, the drain fence, and stopping with or without errors.
#include "engine/streams.h"

#include <sched.h>

#include "common/logging.h"

namespace lightcc {

Streams::Streams(std::vector<Channel*> channels, std::vector<std::unique_ptr<Executor>> executors,
                 const shm::HostGroup* engine_host, Counters counters)
    : engine_host_(engine_host), counters_(counters) {
  for (size_t s = 0; s < channels.size(); ++s) {
    auto w = std::make_unique<Worker>();
    channels[s]->host->setAbortFlag(&abort_);
    w->channel = channels[s];
    w->executor = std::move(executors[s]);
    workers_.push_back(std::move(w));
  }
}

Streams::~Streams() { stop(Status::Aborted("lightcc was shut down before this operation completed")); }

void Streams::start() {
  for (auto& w : workers_) {
    w->thread = std::thread([this, wp = w.get()] { work(*wp); });
  }
}

Status Streams::error() const {
  std::lock_guard<std::mutex> lock(error_mu_);
  return error_;
}

void Streams::recordError(const Status& st) {
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (error_.ok()) error_ = st;
  }
  failed_.store(true, std::memory_order_release);
}

void Streams::submit(int stream, Batch batch) {
  Worker& w = *workers_[stream];
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.queue.push_back(std::move(batch));
  }
  w.channel->host->wakeSelf();
}

Status Streams::drain() {
  auto idle = [&] { return outstanding_.load(std::memory_order_acquire) == 0 || failed(); };
  // Workers' own waits time out (LIGHTCC_TIMEOUT), so this wait ends without a deadline of its own.
  LIGHTCC_RETURN_IF_ERROR(engine_host_->waitUntil(idle, "streams to finish (fence)", false));
  return error();
}

void Streams::work(Worker& w) {
  Channel& ch = *w.channel;
  const std::string name = "stream " + std::to_string(ch.index);
  // Idle waits need no polling of network links (submit() rings this channel's doorbell), so
  // they use a view of the same channel whose sleeps are not capped for network polling.
  std::unique_ptr<shm::HostGroup> idle_view = ch.host->channel(ch.index);
  idle_view->setMaxSleepUs(1e6);
  while (true) {
    auto ready = [&] {
      std::lock_guard<std::mutex> lock(w.mu);
      return !w.queue.empty() || stopping_.load(std::memory_order_acquire);
    };
    Status ignored = idle_view->waitUntil(ready, name + " work", false, 1e6);
    (void)ignored;  // without peer checks a wait only returns OK
    Batch batch;
    {
      std::lock_guard<std::mutex> lock(w.mu);
      if (w.queue.empty()) {
        if (stopping_.load(std::memory_order_acquire)) break;
        continue;
      }
      batch = std::move(w.queue.front());
      w.queue.pop_front();
    }
    Status st;
    if (abort_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(error_mu_);
      st = abort_status_;
    } else if (failed()) {
      st = error();  // peers may be stuck on the failed stream; do not start more work
    } else {
      const uint64_t now = running_.fetch_add(1, std::memory_order_acq_rel) + 1;
      uint64_t seen = counters_.busy_max->load(std::memory_order_relaxed);
      while (now > seen && !counters_.busy_max->compare_exchange_weak(seen, now)) {
      }
      st = w.executor->run(batch);
      running_.fetch_sub(1, std::memory_order_acq_rel);
      counters_.batches->fetch_add(1, std::memory_order_relaxed);
      if (!st.ok()) {
        st = st.withContext(name);
        if (st.code() == StatusCode::kAborted && failed()) {
          // A wait cut short because another stream failed: report that failure, which names the
          // rank and peer, rather than the bare abort.
          st = error().withContext(name + " stopped because another stream failed");
        } else {
          LIGHTCC_LOG(kError) << st.message();
        }
        recordError(st);
      }
    }
    if (!st.ok()) w.executor->fail(batch, st);
    outstanding_.fetch_sub(1, std::memory_order_acq_rel);
    engine_host_->wakeSelf();
  }
}

void Streams::abort(const Status& why) {
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (abort_status_.ok()) abort_status_ = why;
  }
  abort_.store(true, std::memory_order_release);
  for (auto& w : workers_) w->channel->host->wakeSelf();
}

void Streams::stop(const Status& why) {
  if (!why.ok()) abort(why);
  stopping_.store(true, std::memory_order_release);
  for (auto& w : workers_) w->channel->host->wakeSelf();
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
  // Only batches submitted after the workers left (none, normally) remain.
  for (auto& w : workers_) {
    for (Batch& b : w->queue) w->executor->fail(b, why.ok() ? Status::Aborted("lightcc was shut down") : why);
    w->queue.clear();
  }
}

}  // namespace lightcc
