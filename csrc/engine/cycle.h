// Cycle: one negotiation cycle of the driver — vote, negotiate a plan, tune, fuse, dispatch, count.
//
// Owned by the Driver (driver.h), made once bootstrap has the negotiator and the dispatcher, and
// run only by the thread that drives. It remembers what the driver's timers ask of the last cycle:
// when it ended and whether work kept arriving while it negotiated (HOROVOD_CYCLE_TIME).
#pragma once

#include <chrono>

#include "engine/dispatcher.h"
#include "engine/executor_pool.h"
#include "engine/fusion_policy.h"
#include "engine/lifecycle.h"
#include "engine/negotiator.h"
#include "engine/tuning.h"
#include "engine/tuning_hook.h"

namespace lightcc {

class CycleRunner {
 public:
  // The driver's parts one cycle uses; all outlive this.
  struct Parts {
    const Config& config;
    Lifecycle& life;
    TensorQueue& queue;
    Timeline& timeline;
    EngineStats& stats;
    Negotiator& negotiator;
    Dispatcher& dispatch;
    Tuning& tuning;
    FusionPolicy& fusion;
    TuningHook& tune;
    ExecutorPool& pool;
  };
  explicit CycleRunner(const Parts& parts) : p_(parts) {}

  Status run(bool* stop);  // one cycle; *stop when every rank agreed to end
  // Work arrived while the last cycle negotiated: a producer runs ahead of us.
  bool busy() const { return busy_; }
  std::chrono::steady_clock::time_point lastEnd() const { return last_end_; }

 private:
  Negotiator::Votes vote(std::chrono::steady_clock::time_point now);

  const Parts p_;
  Negotiator::Plan plan_;  // this cycle's agreed plan (its capacity is reused)
  bool busy_ = false;
  std::chrono::steady_clock::time_point last_end_;
};

}  // namespace lightcc
