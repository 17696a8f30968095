// StepMeter: the autotuner's clock — training steps found in the agreed plans, and each sample's median score.
//
// DESIGN. Owned by the Autotuner (autotuner.h), rank 0's driving thread only. A tensor agreed a
// second time starts a new training step; a step's score is the bytes agreed in it divided by
// its wall time, and a sample is the median of HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE steps' scores.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace lightcc {

class StepMeter {
 public:
  using Clock = std::chrono::steady_clock;
  struct Step {
    double seconds = 0.0;
    double bytes = 0.0;
  };
  struct Sample {
    double score = 0.0;          // bytes per second, the median step's
    double median_step_s = 0.0;
  };
  explicit StepMeter(int64_t steps_per_sample) : steps_per_sample_(steps_per_sample) {}

  // A tensor (`key`, `bytes`) agreed at `now`. True when it was agreed in this step already: a
  // new step starts with it, and *ended is the one it closes.
  bool agreed(std::string key, double bytes, Clock::time_point now, Step* ended);
  // A closed step joins the sample. True when that completes the sample (*sample).
  bool count(const Step& step, Sample* sample);
  // A new setting takes effect after the step that chose it, which ran partly under the old one.
  void skipNext() { skip_ = 1; }
  uint64_t steps() const { return steps_; }  // counted so far

 private:
  const int64_t steps_per_sample_;
  std::unordered_set<std::string> seen_;  // tensors agreed in the current step
  bool started_ = false;
  Clock::time_point step_start_;
  double step_bytes_ = 0.0;
  uint64_t steps_ = 0;
  int skip_ = 0;                     // switch-over steps still to discard
  std::vector<double> step_scores_;  // this sample's steps
  std::vector<double> step_seconds_;
};

}  // namespace lightcc
