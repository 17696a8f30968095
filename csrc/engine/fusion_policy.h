// FusionPolicy: when held tensors run — the fusion scheduler for the settings in force, the flush
// vote, GPU pacing's cycle request, and the nudge for a caller about to block.
//
// DESIGN. Owned by the driver (driver.h) and used by its driving thread, except nudge() and the
// `holding_` flag it reads (any caller thread). The scheduler (fusion_scheduler.h) decides per
// cycle what runs fused; this part decides when a cycle must flush it: a tensor a caller waits
// on, LIGHT_FUSION_FLUSH_MS without news, or (paced GPU allreduces) this rank's GPU becoming
// ready. A new tuning generation with other fusion options replaces the scheduler (rebuild()).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "engine/executor_pool.h"
#include "engine/fusion_scheduler.h"
#include "engine/negotiator.h"
#include "engine/stats.h"
#include "engine/tuning.h"

namespace lightcc {

class FusionPolicy {
 public:
  FusionPolicy(const Config& config, const Tuning& tuning, ExecutorPool& pool, EngineStats& stats)
      : config_(config), tuning_(tuning), pool_(pool), stats_(stats) {}

  // Bootstrap, once tuning has its first settings: whom to ask about waiters, whom to wake.
  void start(const Negotiator& negotiator, shm::HostGroup* host);
  void rebuild();  // an empty scheduler for the fusion options in force
  // This cycle's batches from the plan's responses; `flush` runs everything held.
  std::vector<ResponsePtr> schedule(const Negotiator::Plan& plan, bool flush);

  bool wantsFlush() const;  // this rank asks every rank to run its held tensors now
  // GPU allreduces are held for a busy GPU and this rank's, busy at the last vote, is ready now.
  bool wantsCycle();
  void voted(bool device_ready) { voted_device_ready_ = device_ready; }  // this cycle's vote
  bool holding() const { return scheduler_ && scheduler_->holding(); }   // held bucket tensors
  bool paced() const { return scheduler_ && scheduler_->pacedCount() > 0; }  // held for a busy GPU
  void nudge();  // any thread: a caller is about to block on a tensor fusion may hold

 private:
  void publish();  // the counters and the flag callers read

  const Config& config_;
  const Tuning& tuning_;
  ExecutorPool& pool_;
  EngineStats& stats_;
  const Negotiator* negotiator_ = nullptr;
  shm::HostGroup* host_ = nullptr;
  std::unique_ptr<FusionScheduler> scheduler_;
  std::atomic<bool> holding_{false};  // read by callers' nudge()
  bool voted_device_ready_ = true;    // this rank's device_ready vote in the last cycle
};

}  // namespace lightcc
