// Tuning: the engine's tunables as one immutable Settings snapshot, with the cost model and the autotuner that move them.
//
// DESIGN. Owned by the engine's driver (driver.h). The settings start from the config (and, with
// LIGHT_FUSION_STRATEGY=cost, the cost model probed at init); HOROVOD_AUTOTUNE replaces them
// whole, on every rank in the same cycle (autotuner.h says how). The driving thread reads
// live() without a lock, since it is the only writer; other threads (fusion_info,
// autotune_state) take current(), a shared snapshot that stays valid after a change. Which
// parameters move, and how, is in docs/tuning.md: fusion threshold, strategy, cycle time and
// top-k threshold switch live; so do 2D on/off and the active streams (up to the workers built
// at init).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "engine/autotuner.h"
#include "engine/channel.h"
#include "engine/cost_model.h"
#include "engine/fusion_scheduler.h"
#include "engine/topology.h"
#include "engine/two_d_choice.h"

namespace lightcc {

// The tunables in force, never changed once made.
struct Settings {
  TuneParams params;                // cycle time, active streams, 2D, top-k threshold, ...
  FusionScheduler::Options fusion;  // fusionOptionsFor(params)
  uint64_t generation = 1;          // autotune's; 1 is the starting set
  uint64_t applied_cycle = 0;       // the cycle that applied it (the same on every rank)
  bool frozen = false;              // the search has ended
  int64_t two_d_from_bytes = 0;     // with params.two_d: dense allreduces from this size take 2D
  std::vector<std::pair<uint64_t, TuneParams>> history;  // (applied cycle, params) per generation
};
using SettingsPtr = std::shared_ptr<const Settings>;

class Tuning {
 public:
  explicit Tuning(const Config& config) : config_(config), topk_threshold_(config.topk.threshold_bytes) {}

  // Bootstrap, a collective on `world` (LIGHT_FUSION_STRATEGY=cost, or an automatic 2D choice
  // where the world has 2D groups of `two_d_group` ranks, probes the links): the cost model, the
  // 2D choice and the top-k threshold the executors start with.
  Status probe(const SetComm& world, const std::vector<std::string>& hosts, const Topology& topo, int two_d_group);
  int64_t initialTopkThreshold() const { return topk_threshold_; }
  // Bootstrap, after the executors: the first settings, and rank 0's autotuner (HOROVOD_AUTOTUNE).
  Status start(int rank, int streams);

  // The fusion options of a set of parameters: the one place bucket sizes are derived.
  FusionScheduler::Options fusionOptionsFor(const TuneParams& p) const;
  const CostModel& costModel() const { return cost_model_; }
  const TwoDChoice& twoD() const { return two_d_; }  // fixed after probe()
  SettingsPtr current() const;                      // any thread
  const Settings& live() const { return *live_; }   // the driving thread

  // The driving thread, every cycle with HOROVOD_AUTOTUNE: rank 0's vote, then the agreed words.
  void vote(uint64_t* words) const;
  // The settings the agreed words name, or null when they are the ones in force; an error when
  // the words are not valid here (names the rank).
  Status next(const uint64_t* words, uint64_t cycle, int rank, int max_streams, SettingsPtr* out) const;
  void install(SettingsPtr settings);
  void observe(const std::vector<ResponsePtr>& agreed, uint64_t cycle, std::chrono::steady_clock::time_point now);
  bool searching() const { return autotuner_ != nullptr; }

 private:
  const Config& config_;
  CostModel cost_model_;  // fixed after probe()
  TwoDChoice two_d_;      // fixed after probe()
  int64_t topk_threshold_;  // LIGHT_TOPK_THRESHOLD, or the cost model's
  std::unique_ptr<Autotuner> autotuner_;  // rank 0 with HOROVOD_AUTOTUNE
  mutable std::mutex mu_;                 // guards shared_ for readers on other threads
  SettingsPtr shared_;
  SettingsPtr live_;                      // the driving thread's copy of shared_
};

}  // namespace lightcc
