// Autotuner: the tuning words, the staged search (warm-up, baseline, categorical, Bayes, frozen), the CSV log.
#include "engine/autotuner.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

#include "common/logging.h"
#include "engine/fusion.h"
#include "engine/op_traits.h"

namespace lightcc {
namespace {

// Numeric ranges of the Bayesian stage (unit cube <-> values).
constexpr double kThresholdLog2Lo = 20, kThresholdLog2Hi = 28;  // 1 MiB .. 256 MiB
constexpr double kCycleMsHi = 5.0;
constexpr double kTopkLog2Lo = 16, kTopkLog2Hi = 26;            // 64 KiB .. 64 MiB

}  // namespace

bool TuneParams::operator==(const TuneParams& o) const {
  return fusion_threshold == o.fusion_threshold && cycle_time_ms == o.cycle_time_ms && strategy == o.strategy &&
         streams == o.streams && two_d == o.two_d && topk_threshold == o.topk_threshold;
}

std::string TuneParams::describe() const {
  std::ostringstream os;
  os << "fusion " << fusionStrategyName(strategy) << " " << fusion_threshold << " B, cycle " << cycle_time_ms
     << " ms, streams " << streams << ", 2D " << (two_d ? "on" : "off") << ", top-k threshold " << topk_threshold
     << " B";
  return os.str();
}

void encodeTune(uint64_t generation, const TuneParams& p, bool frozen, uint64_t* w) {
  w[0] = generation;
  w[1] = static_cast<uint64_t>(p.fusion_threshold);
  w[2] = static_cast<uint64_t>(std::llround(p.cycle_time_ms * 1e6));  // nanoseconds
  w[3] = static_cast<uint64_t>(p.strategy) | static_cast<uint64_t>(p.streams) << 8 | uint64_t{p.two_d} << 16 | uint64_t{frozen} << 24;
  w[4] = static_cast<uint64_t>(p.topk_threshold);
}

uint64_t decodeTune(const uint64_t* w, TuneParams* p, bool* frozen) {
  *frozen = ((w[3] >> 24) & 1) != 0;
  p->fusion_threshold = static_cast<int64_t>(w[1]);
  p->cycle_time_ms = static_cast<double>(w[2]) / 1e6;
  p->strategy = static_cast<FusionStrategy>(w[3] & 0xff);
  p->streams = static_cast<int>((w[3] >> 8) & 0xff);
  p->two_d = ((w[3] >> 16) & 1) != 0;
  p->topk_threshold = static_cast<int64_t>(w[4]);
  return w[0];
}

Autotuner::Autotuner(const Config& config, const TuneSpace& space, const TuneParams& initial)
    : config_(config),
      space_(space),
      current_(initial),
      warmup_left_(config.autotune.warmup_samples),
      meter_(config.autotune.steps_per_sample) {
  stage_ = warmup_left_ > 0 ? Stage::kWarmup : Stage::kBaseline;
}

Status Autotuner::create(const Config& config, const TuneSpace& space, const TuneParams& initial,
                         std::unique_ptr<Autotuner>* out) {
  std::unique_ptr<Autotuner> t(new Autotuner(config, space, initial));
  if (!config.autotune.log.empty()) {
    t->log_ = std::fopen(config.autotune.log.c_str(), "w");
    if (t->log_ == nullptr) {
      return Status::InvalidArgument("HOROVOD_AUTOTUNE_LOG='" + config.autotune.log +
                                     "': cannot open for writing: " + std::strerror(errno));
    }
    std::fprintf(t->log_,
                 "sample,stage,step,cycle,fusion_threshold_bytes,cycle_time_ms,fusion_strategy,streams,two_d,"
                 "topk_threshold_bytes,score_bytes_per_s,median_step_ms,best_score_bytes_per_s\n");
    std::fflush(t->log_);
  }
  *out = std::move(t);
  return Status::OK();
}

Autotuner::~Autotuner() {
  if (log_ != nullptr) std::fclose(log_);
}

bool Autotuner::observe(const std::vector<std::shared_ptr<const Response>>& agreed, uint64_t cycle,
                        Clock::time_point now) {
  const uint64_t before = generation_;
  for (const auto& rp : agreed) {
    const Response& r = *rp;
    if (!movesData(r.op) || r.isError()) continue;
    for (size_t i = 0; i < r.names.size(); ++i) {
      StepMeter::Step ended;
      StepMeter::Sample sample;
      const double bytes = static_cast<double>(tensorBytes(r, i));
      if (meter_.agreed(std::to_string(r.process_set_id) + ":" + r.names[i], bytes, now, &ended) &&
          stage_ != Stage::kFrozen && meter_.count(ended, &sample)) {
        sampleDone(sample.score, sample.median_step_s, cycle);
      }
    }
  }
  return generation_ != before;
}

void Autotuner::sampleDone(double score, double median_step_s, uint64_t cycle) {
  ++samples_;
  if (stage_ == Stage::kWarmup) {
    logRow("warmup", cycle, current_, score, median_step_s);
    if (--warmup_left_ <= 0) stage_ = Stage::kBaseline;
    return;
  }
  if (!best_.measured || score > best_.score) {
    best_ = {current_, score, true};
  }
  if (stage_ == Stage::kBayes) bayes_.observe(toUnit(current_), score);
  logRow(stage_ == Stage::kBaseline ? "baseline" : stage_ == Stage::kCategorical ? "categorical" : "bayes", cycle,
         current_, score, median_step_s);
  if (stage_ == Stage::kBaseline) stage_ = Stage::kCategorical;
  if (stage_ == Stage::kCategorical) {
    if (queue_.empty()) nextCategorical();  // may move on to the Bayesian stage (which proposes)
    if (stage_ == Stage::kCategorical) {
      propose(queue_.back());
      queue_.pop_back();
    }
  } else {
    nextBayes();
  }
  if (stage_ == Stage::kFrozen) freeze(cycle);
}

// Candidates for the next categorical parameter that has more than one value, from the best so
// far; when none is left the Bayesian stage starts from the best, with its score as the first
// observation.
void Autotuner::nextCategorical() {
  while (queue_.empty() && categorical_ < 3) {
    const int which = categorical_++;
    const TuneParams base = best_.params;
    std::vector<TuneParams> cands;
    if (which == 0 && space_.two_d) {
      TuneParams p = base;
      p.two_d = !base.two_d;
      cands.push_back(p);
    } else if (which == 1) {
      for (FusionStrategy s : {FusionStrategy::kSize, FusionStrategy::kOrder, FusionStrategy::kCost}) {
        if (s == base.strategy || (s == FusionStrategy::kCost && !space_.cost)) continue;
        TuneParams p = base;
        p.strategy = s;
        cands.push_back(p);
      }
    } else if (which == 2) {
      for (int k = 1; k <= space_.max_streams; ++k) {
        if (k == base.streams) continue;
        TuneParams p = base;
        p.streams = k;
        cands.push_back(p);
      }
    }
    std::reverse(cands.begin(), cands.end());  // measured from the back
    queue_ = std::move(cands);
  }
  if (!queue_.empty()) return;
  stage_ = Stage::kBayes;
  // The first sample is the categorical winner's.
  bayes_.start(toUnit(best_.params), best_.score, config_.autotune.bayes_max_samples - 1);
  nextBayes();
}

void Autotuner::nextBayes() {
  std::vector<double> x;
  if (!bayes_.next(config_.autotune.gp_noise, &x)) {
    stage_ = Stage::kFrozen;
    return;
  }
  propose(fromUnit(x, best_.params));
}

void Autotuner::propose(const TuneParams& p) {
  if (p != current_) {
    current_ = p;
    ++generation_;
    meter_.skipNext();  // the step that chose it ran partly under the old setting
  }
}

void Autotuner::freeze(uint64_t cycle) {
  current_ = best_.params;
  ++generation_;  // every rank learns it froze
  stage_ = Stage::kFrozen;
  logRow("frozen", cycle, current_, best_.score, 0.0);
  LIGHTCC_LOG(kInfo) << "autotune: froze " << current_.describe() << " after " << samples_ << " samples ("
                     << best_.score / 1e6 << " MB/s reduced)";
}

void Autotuner::logRow(const char* stage, uint64_t cycle, const TuneParams& p, double score, double median_step_s) {
  if (log_ == nullptr) return;
  std::fprintf(log_, "%lld,%s,%llu,%llu,%lld,%.3f,%s,%d,%d,%lld,%.1f,%.3f,%.1f\n", static_cast<long long>(samples_),
               stage, static_cast<unsigned long long>(meter_.steps()), static_cast<unsigned long long>(cycle),
               static_cast<long long>(p.fusion_threshold), p.cycle_time_ms, fusionStrategyName(p.strategy), p.streams,
               p.two_d ? 1 : 0, static_cast<long long>(p.topk_threshold), score, median_step_s * 1e3,
               best_.measured ? best_.score : 0.0);
  std::fflush(log_);
}

std::vector<double> Autotuner::toUnit(const TuneParams& p) const {
  std::vector<double> x;
  const double t = std::log2(static_cast<double>(std::max<int64_t>(p.fusion_threshold, 1)));
  x.push_back(std::clamp((t - kThresholdLog2Lo) / (kThresholdLog2Hi - kThresholdLog2Lo), 0.0, 1.0));
  x.push_back(std::clamp(p.cycle_time_ms / kCycleMsHi, 0.0, 1.0));
  if (space_.topk) {
    const double k = std::log2(static_cast<double>(std::max<int64_t>(p.topk_threshold, 1)));
    x.push_back(std::clamp((k - kTopkLog2Lo) / (kTopkLog2Hi - kTopkLog2Lo), 0.0, 1.0));
  }
  return x;
}

TuneParams Autotuner::fromUnit(const std::vector<double>& x, const TuneParams& base) const {
  TuneParams p = base;
  // Quarter-octave thresholds, whole KiB; cycle time in 0.1 ms steps.
  const double t = std::round(4 * (kThresholdLog2Lo + x[0] * (kThresholdLog2Hi - kThresholdLog2Lo))) / 4;
  p.fusion_threshold = static_cast<int64_t>(std::llround(std::exp2(t) / 1024)) * 1024;
  p.cycle_time_ms = std::round(x[1] * kCycleMsHi * 10) / 10;
  if (space_.topk) {
    const double k = std::round(4 * (kTopkLog2Lo + x[2] * (kTopkLog2Hi - kTopkLog2Lo))) / 4;
    p.topk_threshold = static_cast<int64_t>(std::llround(std::exp2(k) / 1024)) * 1024;
  }
  return p;
}

}  // namespace lightcc
