// Top-k schedule: what one step of a compressed tensor does, the same rule for host and device.
//
// Deep Gradient Compression's recipe, step by step (docs/topk.md says why each default):
// - warm-up (LIGHT_TOPK_WARMUP_STEPS, LIGHT_TOPK_WARMUP): during a tensor's first steps its
//   density falls geometrically from 25 % (or the target, if higher) to the target (decay, the
//   default), or the tensor runs dense; afterwards every step keeps the target density. A
//   residual restored from a checkpoint starts past the warm-up, since training resumes there;
// - momentum correction: a front that wraps a momentum-SGD optimizer declares the tensor's
//   momentum (TopkTensorOptions); the core then accumulates velocity u and residual v and sends
//   top-k of v, and the front steps the parameter by the result without the optimizer's own
//   momentum. LIGHT_TOPK_MOMENTUM, when set, replaces the declared factor (and applies to
//   undeclared tensors, whose callers step by the result themselves);
// - local clipping (LIGHT_TOPK_CLIP): a rank's gradient of a tensor is scaled down to at most
//   LIGHT_TOPK_CLIP times the running mean of its own recent norms before it is accumulated.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/hierarchical.h"
#include "common/config.h"

namespace lightcc {

// What a framework front declared about one tensor (local to this rank: nothing here changes
// which algorithm runs, so ranks cannot disagree on the exchange through it).
struct TopkTensorOptions {
  bool declared = false;  // a front wrapping an optimizer described this tensor
  bool sgd = false;       // its optimizer is SGD-like: momentum lives in momentum/nesterov below
  float momentum = 0.0f;  // the optimizer's momentum (0: none)
  bool nesterov = false;
};

// Per-tensor bookkeeping of the training recipe on this rank.
struct TopkTrainState {
  double norm_mean = 0.0;    // running mean of the (clipped) local gradient norm; 0 = none yet
  uint64_t clipped = 0;      // steps whose gradient was scaled down
  float applied_momentum = 0.0f;  // momentum correction of the last step (0: none)
};

struct TopkStep {
  bool dense = false;  // warm-up without decay: a plain allreduce this step
  TopkParams params;   // density, momentum, error feedback and the sampling seed of this step
};

// Step `steps` (0 = the tensor's first) of a tensor on `rank`.
TopkStep topkStepFor(const Config& config, uint64_t steps, int rank, const TopkTensorOptions& options = {});

// The step count a tensor whose residual was restored from a checkpoint continues from.
inline uint64_t topkRestoredSteps(const Config& config) { return static_cast<uint64_t>(config.topk.warmup_steps); }

// Local clipping: the factor (<= 1) this rank's contribution `in` * prescale is scaled by, and
// the running norm updated. 1 when LIGHT_TOPK_CLIP is 0, on the tensor's first step, or when the
// norm is not finite (a diverging run is not hidden).
double topkClipScale(const Config& config, TopkTrainState& train, const float* in, size_t count, double prescale);

// A dense (warm-up) step with momentum correction: accumulates in * prescale into the velocity and
// residual and returns the residual, which the dense allreduce then sends whole; call
// topkDenseSent afterwards. Without momentum, returns `in` unchanged.
const float* topkDenseInput(TopkTensorState& state, const TopkStep& step, const float* in, size_t count,
                            double prescale);
// Everything was sent: the residual empties; the velocity stays (no masking when all is sent,
// so dense steps are exactly momentum SGD).
void topkDenseSent(TopkTensorState& state, const TopkStep& step);

}  // namespace lightcc
