// topk_train_test: DGC's training recipe in the core — momentum correction (plain, Nesterov,
// scaled), the per-tensor momentum rule, local clipping, dense warm-up steps with momentum, and
// the store's declarations, read-back and velocity checkpoints.
// tests/single/test_cpp_units.py builds and runs it.
#include <cmath>
#include <cstdio>
#include <vector>

#include "algorithms/topk_schedule.h"
#include "check.h"
#include "engine/topk_store.h"
#include "kernels/topk_train.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

// torch.optim.SGD's buffer and step for one element, in double: what momentum correction must
// reproduce when every element is sent every step.
struct TorchSgd {
  double buf = 0;
  bool started = false;
  double step(double g, double m, bool nesterov) {
    buf = started ? m * buf + g : g;
    started = true;
    return nesterov ? g + m * buf : buf;
  }
};

void testDgcAccumulateMatchesMomentumSgd() {
  const float m = 0.9f;
  for (bool nesterov : {false, true}) {
    std::vector<float> u(3, 0.0f), v(3, 0.0f);
    TorchSgd ref[3];
    bool same = true;
    for (int t = 0; t < 20; ++t) {
      const float g[3] = {1.0f + t, -0.5f * t, 0.25f};
      Status st = kernels::dgcAccumulate(u.data(), v.data(), g, DataType::kFloat32, 3, 2.0f, m, nesterov);
      for (int i = 0; i < 3; ++i) {
        const double want = ref[i].step(2.0 * g[i], m, nesterov);  // scale 2 applies to g
        same = same && st.ok() && std::fabs(v[i] - want) <= 1e-4 * std::fmax(1.0, std::fabs(want));
        v[i] = 0.0f;  // everything sent: a dense step keeps u and empties v
      }
    }
    check(same, std::string("sending all of v every step is torch's momentum SGD") + (nesterov ? " (Nesterov)" : ""));
  }
  std::vector<float> u(2, 0.0f), v(2, 0.0f);
  const int32_t ints[2] = {1, 2};
  check(!kernels::dgcAccumulate(u.data(), v.data(), ints, DataType::kInt32, 2, 1.0f, 0.9f, false).ok(),
        "integer gradients are refused");
}

void testMomentumRule() {
  Config config;
  TopkTensorOptions undeclared;
  check(topkStepFor(config, 500, 0, undeclared).params.momentum == 0.0f, "undeclared, flag unset: no correction");
  TopkTensorOptions sgd{true, true, 0.9f, true};
  TopkStep s = topkStepFor(config, 500, 0, sgd);
  check(s.params.momentum == 0.9f && s.params.nesterov, "a declared SGD tensor: its optimizer's momentum");
  TopkTensorOptions adam{true, false, 0.0f, false};
  config.topk.momentum = 0.8;
  config.topk.momentum_set = true;
  check(topkStepFor(config, 500, 0, adam).params.momentum == 0.0f,
        "LIGHT_TOPK_MOMENTUM never corrects a non-SGD optimizer's tensor (it keeps its own moments)");
  check(topkStepFor(config, 500, 0, sgd).params.momentum == 0.8f, "the flag replaces a declared factor");
  check(topkStepFor(config, 500, 0, undeclared).params.momentum == 0.8f, "and applies to undeclared tensors");
  TopkTensorOptions plain{true, true, 0.0f, true};
  config.topk.momentum_set = false;
  check(!topkStepFor(config, 500, 0, plain).params.nesterov, "no momentum: no Nesterov either");
}

void testDefaultsAreTheRecipe() {
  Config config;
  check(config.topk.warmup_decay && config.topk.warmup_steps > 0, "decaying warm-up on by default");
  check(config.topk.min_dims == 2 && config.topk.clip > 0, "vectors dense and clipping on by default");
  const TopkStep first = topkStepFor(config, 0, 0);
  check(!first.dense && std::fabs(first.params.density - 0.25) < 1e-12, "the warm-up starts at 25 %");
  check(topkStepFor(config, static_cast<uint64_t>(config.topk.warmup_steps), 0).params.density == config.topk.density,
        "and ends at the target");
}

void testClipping() {
  Config config;
  config.topk.clip = 2.0;
  TopkTrainState train;
  std::vector<float> g(4, 1.0f);  // norm 2
  check(topkClipScale(config, train, g.data(), 4, 1.0) == 1.0 && std::fabs(train.norm_mean - 2.0) < 1e-12,
        "the first step sets the running norm");
  std::vector<float> spike(4, 10.0f);  // norm 20, limit 2 * 2
  const double s = topkClipScale(config, train, spike.data(), 4, 1.0);
  check(std::fabs(s - 0.2) < 1e-12 && train.clipped == 1, "a spike is scaled to the limit");
  check(std::fabs(train.norm_mean - 2.2) < 1e-12, "the clipped norm, not the spike, enters the mean");
  check(topkClipScale(config, train, g.data(), 4, 0.5) == 1.0, "ordinary steps pass unscaled");
  std::vector<float> bad(4, NAN);
  check(topkClipScale(config, train, bad.data(), 4, 1.0) == 1.0, "a non-finite norm is not hidden");
  config.topk.clip = 0;
  check(topkClipScale(config, train, spike.data(), 4, 1.0) == 1.0, "LIGHT_TOPK_CLIP=0: off");
}

void testDenseWarmupWithMomentum() {
  Config config;
  config.topk.warmup_decay = false;
  TopkTensorState state;
  state.residual.assign(2, 0.0f);
  state.velocity.assign(2, 0.0f);
  const TopkStep step = topkStepFor(config, 0, 0, TopkTensorOptions{true, true, 0.5f, false});
  const float g[2] = {1.0f, 2.0f};
  check(step.dense, "dense warm-up");
  const float* send = topkDenseInput(state, step, g, 2, 1.0);
  check(send == state.residual.data() && send[0] == 1.0f && send[1] == 2.0f, "first dense step sends g");
  topkDenseSent(state, step);
  send = topkDenseInput(state, step, g, 2, 1.0);
  check(send[0] == 1.5f && send[1] == 3.0f && state.velocity[0] == 1.5f, "second: m*u + g, u kept across steps");
  const TopkStep none = topkStepFor(config, 0, 0);
  check(topkDenseInput(state, none, g, 2, 1.0) == g, "no momentum: the gradient itself");
}

void testStore() {
  Config config;
  TopkStore store(config);
  store.declare(0, "w", TopkTensorOptions{false, true, 0.9f, false});
  check(store.entry(0, "w").options.declared, "a declaration marks the entry declared");
  check(store.residuals().empty(), "a declared tensor that never ran has nothing to save");
  TopkStore::Entry& e = store.entry(0, "w");
  e.state.residual = {1.0f, 2.0f};
  e.state.velocity = {3.0f, 4.0f};
  e.state.steps = 7;
  e.train.applied_momentum = 0.9f;
  const TopkStore::Progress p = store.progress(0, "w");
  check(p.steps == 7 && p.momentum == 0.9f, "progress reads steps and the applied momentum");
  auto saved = store.residuals();
  check(saved.count("w") && saved.count("velocity:w") && saved["velocity:w"][1] == 4.0f,
        "checkpoints carry the velocity beside the residual");
  TopkStore fresh(config);
  const float v[2] = {5.0f, 6.0f}, r[2] = {7.0f, 8.0f};
  check(fresh.setResidual("velocity:w", v, 2).ok() && fresh.setResidual("w", r, 2).ok(), "restore both");
  check(fresh.entry(0, "w").state.velocity[0] == 5.0f && fresh.entry(0, "w").state.residual[1] == 8.0f,
        "velocity and residual restored into the same tensor");
  const float three[3] = {0, 0, 0};
  check(!fresh.setResidual("velocity:w", three, 3).ok(), "a velocity of the wrong size is refused");
  check(fresh.setResidual("velocity:2:w", v, 2).ok() && fresh.entry(2, "w").state.velocity.size() == 2,
        "process-set names keep their prefix after the velocity's");
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  std::printf("%s\n", "DgcAccumulate"); testDgcAccumulateMatchesMomentumSgd();
  std::printf("%s\n", "MomentumRule"); testMomentumRule();
  std::printf("%s\n", "Defaults"); testDefaultsAreTheRecipe();
  std::printf("%s\n", "Clipping"); testClipping();
  std::printf("%s\n", "DenseWarmup"); testDenseWarmupWithMomentum();
  std::printf("%s\n", "Store"); testStore();
  return testing::summary();
}
