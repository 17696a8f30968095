// Top-k schedule: what one step of a compressed tensor does, the same rule for host and device.
//
// Deep Gradient Compression's warm-up (LIGHT_TOPK_WARMUP_STEPS): during the first steps either
// the tensor runs dense (the default), or, with LIGHT_TOPK_WARMUP_DECAY, its density falls
// geometrically from 25 % (or the target, if higher) to the target. Afterwards every step keeps
// the target density. A residual restored from a checkpoint starts past the warm-up, since
// training resumes where it was.
#pragma once

#include <cstdint>

#include "algorithms/hierarchical.h"
#include "common/config.h"

namespace lightcc {

struct TopkStep {
  bool dense = false;  // warm-up without decay: a plain allreduce this step
  TopkParams params;   // density, momentum, error feedback and the sampling seed of this step
};

// Step `steps` (0 = the tensor's first) of a tensor on `rank`.
TopkStep topkStepFor(const Config& config, uint64_t steps, int rank);

// The step count a tensor whose residual was restored from a checkpoint continues from.
inline uint64_t topkRestoredSteps(const Config& config) { return static_cast<uint64_t>(config.topk_warmup_steps); }

}  // namespace lightcc
