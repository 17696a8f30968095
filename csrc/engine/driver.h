// Driver: the engine below the queue — mesh, negotiation, fusion, tuning, executors — as Progress drives it.
//
// DESIGN. The Engine (engine.h) owns the caller-facing parts and one Driver; the driver owns
// the rest and is the Progress::Cycle that Progress (progress.h) runs on whichever thread
// drives: the background thread, or a caller waiting on its handle. Everything here is touched
// only by that thread, except where a comment names another (poke, nudgeFusion, requestAbort,
// and the thread-safe parts it hands out: Tuning::current, ExecutorPool's residuals).
//  - driving.cc: the Cycle (is work ready, sleeping, timers, the end), liveness, interrupts.
//  - cycle.h: the CycleRunner, one cycle — votes, negotiate, tune, fuse, dispatch, counters.
// Its parts, one job each: the Dispatcher (dispatcher.h) runs each agreed response, the
// FusionPolicy (fusion_policy.h) says when held tensors run, the TuningHook (tuning_hook.h)
// applies a new tuning generation.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "engine/cycle.h"
#include "engine/dispatcher.h"
#include "engine/executor_pool.h"
#include "engine/fusion_policy.h"
#include "engine/lifecycle.h"
#include "engine/mesh.h"
#include "engine/negotiator.h"
#include "engine/process_sets.h"
#include "engine/progress.h"
#include "engine/tuning.h"
#include "engine/tuning_hook.h"

namespace lightcc {

class Driver : private Progress::Cycle {
 public:
  // The engine's parts the driver uses; the Engine owns them and outlives the driver.
  struct Shared {
    const InitOptions& options;
    const Config& config;
    Topology& topo;
    EngineStats& stats;
    TensorQueue& queue;
    Lifecycle& life;
    ProcessSets& sets;
    Timeline& timeline;
  };
  explicit Driver(const Shared& shared);
  ~Driver() override;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // init: the mesh, the process sets, tuning, executors and negotiation, on the caller's thread.
  Status bootstrap();
  void loop();  // the background thread, until the engine ends
  // A caller blocks until the handle completes, driving when nobody else does.
  Status wait(Handle& handle);
  void poke();         // any thread: look again now (work queued, a stop asked)
  // Any thread: a caller is about to block on a tensor fusion may hold.
  void nudgeFusion() { fusion_.nudge(); }
  const Tuning& tuning() const { return tuning_; }
  ExecutorPool& executors() { return pool_; }
  const shm::HostGroup* hostGroup() const { return host_; }  // channel 0's, after bootstrap
  // Any thread (a waiter's signal, Engine::abort): the thread that drives ends the engine with
  // `why` at its next look (waits inside a collective give up through the lifecycle's flag).
  void requestAbort(const Status& why);

 private:
  // driving.cc: the Cycle.
  bool workReady(bool background) override;
  bool urgent() override;
  bool asyncWork() override;
  Status timers(bool* want_cycle) override;
  Status run(bool background, bool* stop) override;
  Status sleep(const std::function<bool()>& ready, double max_us, bool spin) override;
  double idleUs(bool background) override;
  bool workLeft() override;
  void wake() override;
  void end(const Status& st) override;
  // Peers that exited, or whose engine stopped, end this one too: checked while waiting for
  // work, often when something is pending (a peer that never answers would hang it otherwise).
  Status checkLiveness();

  const Shared s_;
  std::unique_ptr<Mesh> mesh_;
  shm::HostGroup* host_ = nullptr;  // channel 0's host group
  std::unique_ptr<Negotiator> negotiator_;
  std::unique_ptr<Dispatcher> dispatch_;  // each agreed response (dispatcher.h)
  std::unique_ptr<CycleRunner> cycle_;    // one cycle (cycle.h), made by bootstrap
  Tuning tuning_;
  FusionPolicy fusion_;
  TuningHook tune_;
  std::chrono::steady_clock::time_point last_maintenance_, last_liveness_;
  Progress progress_;
  ExecutorPool pool_;  // declared last: its stream workers stop before anything they use goes
};

}  // namespace lightcc
