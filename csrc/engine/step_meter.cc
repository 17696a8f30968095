// StepMeter: step boundaries from repeated tensors, and the median of a sample's steps.
#include "engine/step_meter.h"

#include <algorithm>
#include <utility>

namespace lightcc {
namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}
}  // namespace

bool StepMeter::agreed(std::string key, double bytes, Clock::time_point now, Step* ended) {
  bool new_step = false;
  if (!started_) {
    started_ = true;
    step_start_ = now;
  } else if (seen_.count(key) > 0) {  // seen in this step: a new step starts here
    ended->seconds = std::chrono::duration<double>(now - step_start_).count();
    ended->bytes = step_bytes_;
    step_start_ = now;
    step_bytes_ = 0;
    seen_.clear();
    new_step = true;
  }
  seen_.insert(std::move(key));
  step_bytes_ += bytes;
  return new_step;
}

bool StepMeter::count(const Step& step, Sample* sample) {
  ++steps_;
  if (skip_ > 0) {
    --skip_;
    return false;
  }
  if (step.seconds <= 0) return false;
  step_scores_.push_back(step.bytes / step.seconds);
  step_seconds_.push_back(step.seconds);
  if (static_cast<int64_t>(step_scores_.size()) < steps_per_sample_) return false;
  sample->score = median(step_scores_);
  sample->median_step_s = median(step_seconds_);
  step_scores_.clear();
  step_seconds_.clear();
  return true;
}

}  // namespace lightcc
