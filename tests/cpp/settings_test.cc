// settings_test: the tunables' snapshot (Tuning: fusionOptionsFor, a new generation) and the top-k step rule both executors use.
//
// No ranks: Tuning is started without a cost probe (size strategy) and fed tuning words as the
// plan would carry them; topkStepFor is a pure function of the config and a step count.
// tests/single/test_cpp_units.py builds and runs it.
#include <cmath>
#include <cstdio>

#include "algorithms/topk_schedule.h"
#include "check.h"
#include "engine/tuning.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

void testFusionOptionsFor() {
  Config config;
  config.fusion.first_bucket_bytes = 1 << 20;
  config.device.inflight = 0;
  Tuning tuning(config);
  TuneParams p;
  p.strategy = FusionStrategy::kOrder;
  p.fusion_threshold = 8 << 20;
  FusionScheduler::Options o = tuning.fusionOptionsFor(p);
  check(o.strategy == FusionStrategy::kOrder && o.threshold == 8 << 20 && o.bucket == 8 << 20 &&
            o.first_bucket == 1 << 20 && !o.pace_device,
        "order: buckets of the threshold, the first of LIGHT_FUSION_FIRST_BUCKET");
  p.fusion_threshold = 256 << 10;
  o = tuning.fusionOptionsFor(p);
  check(o.first_bucket == 256 << 10, "the first bucket is never larger than the others");
  config.device.inflight = 2;
  check(Tuning(config).fusionOptionsFor(p).pace_device, "LIGHT_DEVICE_INFLIGHT > 0 paces GPU batches");
}

void testGenerations() {
  Config config;
  config.fusion.cycle_time_ms = 0.5;
  config.topk.threshold_bytes = 1 << 16;
  Tuning tuning(config);
  check(tuning.start(0, 2).ok(), "start without autotune");
  const SettingsPtr first = tuning.current();
  check(first->generation == 1 && first->params.cycle_time_ms == 0.5 && first->params.streams == 2 &&
            first->params.topk_threshold == 1 << 16 && first->fusion.threshold == config.fusion.threshold_bytes,
        "the first settings come from the config");
  uint64_t words[kTuneWords];
  encodeTune(1, first->params, false, words);
  SettingsPtr next;
  check(tuning.next(words, 10, 0, 2, &next).ok() && next == nullptr, "the generation in force: nothing new");
  TuneParams p = first->params;
  p.fusion_threshold = 4 << 20;
  p.streams = 1;
  encodeTune(2, p, true, words);
  check(tuning.next(words, 12, 0, 2, &next).ok() && next != nullptr, "a new generation");
  check(tuning.current() == first, "readers keep the old snapshot until it is installed");
  tuning.install(next);
  const SettingsPtr now = tuning.current();
  check(now->generation == 2 && now->applied_cycle == 12 && now->frozen && now->fusion.threshold == 4 << 20 &&
            now->history.size() == 1 && first->generation == 1 && first->history.empty(),
        "installed whole; the old snapshot is unchanged");
  p.streams = 3;
  encodeTune(3, p, false, words);
  const Status bad = tuning.next(words, 13, 5, 2, &next);
  check(!bad.ok() && bad.message().find("rank 5") != std::string::npos && next == nullptr,
        "more streams than were built: an error naming the rank");
}

void testTopkStep() {
  Config config;
  config.topk.density = 0.01;
  config.topk.warmup_steps = 4;
  config.topk.warmup_decay = false;
  TopkStep s = topkStepFor(config, 0, 0);
  check(s.dense, "warm-up without decay runs dense");
  s = topkStepFor(config, 4, 0);
  check(!s.dense && s.params.density == 0.01, "after the warm-up: the target density");
  check(topkStepFor(config, 5, 1).params.seed != topkStepFor(config, 5, 0).params.seed &&
            topkStepFor(config, 6, 0).params.seed != topkStepFor(config, 5, 0).params.seed,
        "seeds differ per rank and step");
  config.topk.warmup_decay = true;
  double last = 1.0;
  bool falling = true;
  for (uint64_t step = 0; step < 4; ++step) {
    s = topkStepFor(config, step, 0);
    falling = falling && !s.dense && s.params.density < last;
    last = s.params.density;
  }
  check(falling && std::fabs(topkStepFor(config, 0, 0).params.density - 0.25) < 1e-12,
        "decay: from 25 % down, step by step");
  check(topkRestoredSteps(config) == 4, "a restored residual resumes past the warm-up");
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  std::printf("%s\n", "FusionOptionsFor"); testFusionOptionsFor();
  std::printf("%s\n", "Generations"); testGenerations();
  std::printf("%s\n", "TopkStep"); testTopkStep();
  return testing::summary();
}
