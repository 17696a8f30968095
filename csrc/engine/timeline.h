// Timeline: Chrome-trace JSON of negotiation and execution phases, one row per tensor.
//
// Written by rank 0 only (like Horovod). Caller threads start/stop it; the engine thread records.
// A mutex guards the file; when the timeline is off, recording costs one atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/status.h"

namespace lightcc {

class Timeline {
 public:
  ~Timeline() { stop(); }
  Status start(const std::string& path, bool mark_cycles);
  void stop();
  bool active() const { return active_.load(std::memory_order_acquire); }
  bool markCycles() const { return mark_cycles_; }

  // Duration events nest per tensor: begin("allreduce.x", "NEGOTIATE_ALLREDUCE") ... end(...).
  void begin(const std::string& tensor, const std::string& phase);
  void end(const std::string& tensor);
  // A zero-length marker on the tensor's row (e.g. which rank's request just arrived).
  void instant(const std::string& tensor, const std::string& label);
  void cycleStart();

 private:
  int rowOf(const std::string& tensor);  // needs mu_
  void write(const std::string& event);  // needs mu_
  int64_t nowMicros() const;

  std::mutex mu_;
  std::atomic<bool> active_{false};
  bool mark_cycles_ = false;
  std::ofstream out_;
  bool first_event_ = true;
  std::unordered_map<std::string, int> rows_;
  int64_t start_us_ = 0;
};

}  // namespace lightcc
