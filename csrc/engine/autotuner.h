// Autotuner: rank 0's online search over the engine's tunable parameters (HOROVOD_AUTOTUNE).
//
// DESIGN. Owned by the engine and used only by rank 0's driving thread (the coordinator's rank).
// Every cycle the engine hands it the agreed plan. A tensor agreed a second time starts a new
// training step; a step's score is the bytes agreed in it divided by its wall time (bytes reduced
// per second), and a sample is the median score of HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE steps, after
// one discarded switch-over step (a new setting takes effect in the cycle after the step boundary
// that chose it, so that step runs partly under the old one). When a sample completes the tuner
// picks the next candidate; current() and generation() change.
// How every rank applies the same choice at the same cycle without a message of its own: the
// engine writes encodeTune(generation(), current()) into kTuneWords extra words of each cycle's
// AND-reduced bit vector (rank 0 its words, the other ranks all ones), so after the AND every rank
// holds rank 0's words and applies a new generation at that cycle's boundary (engine/tuning_hook.h).
//
// Search, Horovod's structure (its ParameterManager): HOROVOD_AUTOTUNE_WARMUP_SAMPLES samples are
// scored and discarded; the starting configuration is measured (the baseline); then the
// categorical parameters one at a time — 2D on/off, fusion strategy, active streams — each value
// measured from the best so far, the best kept; then a Bayesian optimisation (Gaussian process,
// RBF kernel, expected improvement) over the numeric ones — log2 fusion threshold, cycle time and,
// with top-k on, log2 top-k threshold — for HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES samples, its
// first the categorical winner's; then the best sample seen is frozen.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "engine/bayes_search.h"
#include "engine/request.h"
#include "engine/step_meter.h"

namespace lightcc {

// The parameters the autotuner moves; the engine applies them live (engine/tuning_hook.h).
struct TuneParams {
  int64_t fusion_threshold = 0;  // bytes; order/cost: the bucket size
  double cycle_time_ms = 0.0;
  FusionStrategy strategy = FusionStrategy::kSize;
  int streams = 1;               // active streams, 1..LIGHT_NUM_STREAMS
  bool two_d = false;            // 2D allreduce where the set has 2D communicators
  int64_t topk_threshold = 0;    // bytes (used only with LIGHT_TOPK_ALLREDUCE)
  bool operator==(const TuneParams& o) const;
  bool operator!=(const TuneParams& o) const { return !(*this == o); }
  std::string describe() const;
};

// What may move, from what the engine built at init.
struct TuneSpace {
  bool two_d = false;    // the world set has 2D communicators: 2D switches live
  int max_streams = 1;   // LIGHT_NUM_STREAMS stream workers exist; 1..max can be active
  bool cost = false;     // the cost strategy's model was probed at init
  bool topk = false;     // LIGHT_TOPK_ALLREDUCE: tune its threshold
};

// The plan's tuning words: generation, then the parameters and whether the search has frozen.
// Generation 1 is the starting set; freezing always starts a new generation.
constexpr size_t kTuneWords = 5;
void encodeTune(uint64_t generation, const TuneParams& p, bool frozen, uint64_t* words);
uint64_t decodeTune(const uint64_t* words, TuneParams* p, bool* frozen);

class Autotuner {
 public:
  using Clock = std::chrono::steady_clock;
  // Opens HOROVOD_AUTOTUNE_LOG (when set) and writes its header; fails naming the path.
  static Status create(const Config& config, const TuneSpace& space, const TuneParams& initial,
                       std::unique_ptr<Autotuner>* out);
  ~Autotuner();

  // One cycle's agreed responses. True when current() changed (a new generation).
  bool observe(const std::vector<std::shared_ptr<const Response>>& agreed, uint64_t cycle, Clock::time_point now);
  const TuneParams& current() const { return current_; }
  uint64_t generation() const { return generation_; }
  bool frozen() const { return stage_ == Stage::kFrozen; }

 private:
  enum class Stage { kWarmup, kBaseline, kCategorical, kBayes, kFrozen };
  // The best sample so far (none measured yet: `measured` false).
  struct Sample {
    TuneParams params;
    double score = 0.0;  // bytes per second
    bool measured = false;
  };
  Autotuner(const Config& config, const TuneSpace& space, const TuneParams& initial);
  void sampleDone(double score, double median_step_s, uint64_t cycle);
  void nextCategorical();  // queues the next categorical parameter's candidates, or starts Bayes
  void nextBayes();
  void propose(const TuneParams& p);
  void freeze(uint64_t cycle);
  void logRow(const char* stage, uint64_t cycle, const TuneParams& p, double score, double median_step_s);
  std::vector<double> toUnit(const TuneParams& p) const;
  TuneParams fromUnit(const std::vector<double>& x, const TuneParams& base) const;

  const Config config_;
  const TuneSpace space_;
  TuneParams current_;
  uint64_t generation_ = 1;
  Stage stage_ = Stage::kWarmup;
  int64_t warmup_left_ = 0;
  int categorical_ = 0;                // next categorical parameter to try
  std::vector<TuneParams> queue_;      // candidates still to measure in this stage
  Sample best_;
  BayesSearch bayes_;  // the last stage, over the numeric parameters
  StepMeter meter_;    // steps and samples
  int64_t samples_ = 0;
  std::FILE* log_ = nullptr;
};

}  // namespace lightcc
