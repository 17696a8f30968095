// Top-k schedule: the warm-up rule and each step's parameters, shared by both executors.
#include "algorithms/topk_schedule.h"

#include <algorithm>
#include <cmath>

namespace lightcc {

TopkStep topkStepFor(const Config& config, uint64_t steps, int rank) {
  TopkStep step;
  step.params.density = config.topk_density;
  step.params.momentum = static_cast<float>(config.topk_momentum);
  step.params.error_feedback = config.topk_error_feedback;
  // Different on every rank and step, so the sampled thresholds do not share a bias.
  step.params.seed = steps * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(rank);
  const uint64_t warm = static_cast<uint64_t>(config.topk_warmup_steps);
  if (steps >= warm) return step;
  if (!config.topk_warmup_decay) {
    step.dense = true;
    return step;
  }
  const double start = std::max(0.25, step.params.density);
  step.params.density = start * std::pow(step.params.density / start, static_cast<double>(steps) / warm);
  return step;
}

}  // namespace lightcc
