// Timeline: Chrome-trace JSON of negotiation and execution phases, one row per tensor.
//
// DESIGN. Written by rank 0 only (like Horovod). Caller threads start/stop it. The engine and
// executor threads record: they stamp the time and append a raw event to a queue under mu_
// (one atomic load when the timeline is off; no formatting, no I/O, no syscall when it is on).
// A writer thread owns the file and the tensor rows: every kFlushInterval it takes the queue,
// formats the events, writes and flushes them, so a reader sees an event within about that
// interval while the run goes on (Horovod's timeline is readable as it goes; its own test reads
// the file 0.1 s after an allreduce). stop() wakes the writer, which writes what is left and
// closes the JSON array before it is joined.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace lightcc {

class Timeline {
 public:
  // Longest time a recorded event waits before it is in the file.
  static constexpr std::chrono::milliseconds kFlushInterval{20};

  ~Timeline() { stop(); }
  Status start(const std::string& path, bool mark_cycles);
  void stop();
  bool active() const { return active_.load(std::memory_order_acquire); }

  // Duration events nest per tensor: begin("allreduce.x", "NEGOTIATE_ALLREDUCE") ... end(...).
  void begin(const std::string& tensor, const std::string& phase);
  void end(const std::string& tensor);
  // A zero-length marker on the tensor's row (e.g. which rank's request just arrived).
  void instant(const std::string& tensor, const std::string& label);
  void cycleStart();

 private:
  enum class Kind { kBegin, kEnd, kInstant, kCycleStart };
  struct Event {
    Kind kind;
    int64_t ts;  // micros since start_us_
    std::string tensor, label;
  };

  void record(Kind kind, const std::string& tensor, const std::string& label);
  void writerLoop();                       // the writer thread
  void writeEvent(const Event& e);         // writer thread only
  int rowOf(const std::string& tensor);    // writer thread only
  void writeRaw(const std::string& json);  // writer thread only
  int64_t nowMicros() const;

  std::mutex control_mu_;  // serialises start() and stop()
  std::mutex mu_;          // guards pending_, stopping_ and start_us_
  std::condition_variable wake_;
  std::vector<Event> pending_;
  bool stopping_ = false;
  std::atomic<bool> active_{false};
  std::atomic<bool> mark_cycles_{false};
  int64_t start_us_ = 0;
  std::thread writer_;

  // Owned by the writer thread while it runs (by start/stop otherwise).
  std::ofstream out_;
  bool first_event_ = true;
  std::unordered_map<std::string, int> rows_;
};

}  // namespace lightcc
