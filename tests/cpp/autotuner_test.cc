// autotuner_test: the tuning words round-trip, expected improvement, and a whole search on made-up step times.
#include <memory>

#include "check.h"
#include "engine/autotuner.h"

using lightcc::testing::check;
using namespace lightcc;

namespace {

std::shared_ptr<const Response> allreduce(const std::string& name, int64_t count) {
  auto r = std::make_shared<Response>();
  r->op = OpType::kAllreduce;
  r->names = {name};
  r->dtype = DataType::kFloat32;
  r->shapes = {{count}};
  return r;
}

}  // namespace

int main() {
  TuneParams p;
  p.fusion_threshold = 3 << 20;
  p.cycle_time_ms = 1.2;
  p.strategy = FusionStrategy::kOrder;
  p.streams = 3;
  p.two_d = true;
  p.topk_threshold = 65536;
  uint64_t w[kTuneWords];
  encodeTune(7, p, true, w);
  TuneParams q;
  bool frozen = false;
  check(decodeTune(w, &q, &frozen) == 7 && q == p && frozen, "tuning words round-trip");

  // A clear peak at x = 0.8: expected improvement prefers candidates next to it.
  std::vector<std::vector<double>> x = {{0.0}, {0.4}, {0.8}, {1.0}};
  std::vector<double> y = {1.0, 2.0, 5.0, 2.5};
  std::vector<std::vector<double>> cands = {{0.05}, {0.3}, {0.75}};
  check(pickByExpectedImprovement(x, y, cands, 0.01) == 2, "EI picks the candidate beside the best");

  // A whole search: 2D on doubles the score, everything else is neutral. One step per sample.
  Config config;
  config.autotune.enabled = true;
  config.autotune.warmup_samples = 1;
  config.autotune.steps_per_sample = 1;
  config.autotune.bayes_max_samples = 3;
  TuneSpace space;
  space.two_d = true;
  space.max_streams = 2;
  TuneParams start;
  start.fusion_threshold = 128 << 20;
  std::unique_ptr<Autotuner> t;
  check(Autotuner::create(config, space, start, &t).ok(), "create");
  auto now = Autotuner::Clock::now();
  uint64_t cycle = 0;
  bool saw_two_d = false;
  for (int step = 0; step < 40 && !t->frozen(); ++step) {
    for (int k = 0; k < 3; ++k) t->observe({allreduce("g" + std::to_string(k), 1 << 20)}, ++cycle, now);
    now += std::chrono::milliseconds(t->current().two_d ? 50 : 100);
    saw_two_d = saw_two_d || t->current().two_d;
  }
  t->observe({allreduce("g0", 1 << 20)}, ++cycle, now);
  check(saw_two_d, "2D was tried");
  check(t->frozen(), "the search froze");
  check(t->current().two_d, "2D kept (twice the score)");
  check(t->generation() > 3, "several generations proposed");
  return lightcc::testing::summary();
}
