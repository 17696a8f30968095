// completions.h: the one thread that hands finished submissions to their Python callbacks.
//
// DESIGN. A submission made with `on_done` (torch futures: the torch.distributed backend's Work
// and the DDP hooks) is not waited on by anybody. Its handles' completion callbacks, run on the
// engine's threads, count down and post the submission id here; this thread takes the GIL and
// calls `on_done(id)`, and the front synchronizes the id (which no longer blocks) into the
// future's value or exception. One thread for the process, started on first use: no thread per
// bucket and no polling loop, and the engine thread never waits for the GIL.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

namespace lightcc::bindings {

class Completions {
 public:
  static Completions& instance();
  // Any thread, without the GIL: the submission `id` has completed.
  void post(int64_t id);
  // With the GIL: delivers what is posted, then ends the thread (Python's exit).
  void stop();

 private:
  void run();
  void deliver(int64_t id);  // GIL held

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int64_t> ready_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace lightcc::bindings
