// Top-k schedule: the warm-up rule, each step's parameters, local clipping, dense momentum steps.
#include "algorithms/topk_schedule.h"

#include <algorithm>
#include <cmath>

#include "kernels/topk_train.h"

namespace lightcc {
namespace {

// Weight of the newest norm in the running mean: about the last ten steps count.
constexpr double kNormMeanWeight = 0.1;

float momentumFor(const Config& config, const TopkTensorOptions& options) {
  if (!options.declared) return static_cast<float>(config.topk.momentum);
  if (!options.sgd) return 0.0f;  // Adam and the like keep their own moments
  return config.topk.momentum_set ? static_cast<float>(config.topk.momentum) : options.momentum;
}

}  // namespace

TopkStep topkStepFor(const Config& config, uint64_t steps, int rank, const TopkTensorOptions& options) {
  TopkStep step;
  step.params.density = config.topk.density;
  step.params.momentum = momentumFor(config, options);
  step.params.nesterov = step.params.momentum > 0 && options.declared && options.sgd && options.nesterov;
  step.params.error_feedback = config.topk.error_feedback;
  // Different on every rank and step, so the sampled thresholds do not share a bias.
  step.params.seed = steps * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(rank);
  const uint64_t warm = static_cast<uint64_t>(config.topk.warmup_steps);
  if (steps >= warm) return step;
  if (!config.topk.warmup_decay) {
    step.dense = true;
    return step;
  }
  const double start = std::max(0.25, step.params.density);
  step.params.density = start * std::pow(step.params.density / start, static_cast<double>(steps) / warm);
  return step;
}

double topkClipScale(const Config& config, TopkTrainState& train, const float* in, size_t count, double prescale) {
  if (config.topk.clip <= 0 || count == 0) return 1.0;
  const double norm = std::sqrt(kernels::squaredNorm(in, count)) * std::fabs(prescale);
  if (!std::isfinite(norm)) return 1.0;
  if (train.norm_mean <= 0) {
    train.norm_mean = norm;
    return 1.0;
  }
  const double limit = config.topk.clip * train.norm_mean;
  const double scale = norm > limit ? limit / norm : 1.0;
  if (scale < 1.0) ++train.clipped;
  // The clipped norm enters the mean, so one spike does not raise the limit for the next.
  train.norm_mean += kNormMeanWeight * (std::min(norm, limit) - train.norm_mean);
  return scale;
}

const float* topkDenseInput(TopkTensorState& state, const TopkStep& step, const float* in, size_t count,
                            double prescale) {
  if (step.params.momentum <= 0) return in;
  // Cannot fail: float32 is always accepted.
  (void)kernels::dgcAccumulate(state.velocity.data(), state.residual.data(), in, DataType::kFloat32, count,
                               static_cast<float>(prescale), step.params.momentum, step.params.nesterov);
  return state.residual.data();
}

void topkDenseSent(TopkTensorState& state, const TopkStep& step) {
  if (step.params.momentum > 0) std::fill(state.residual.begin(), state.residual.end(), 0.0f);
}

}  // namespace lightcc
