// TuningHook: applying the generation the plan agreed (tuning.h holds the settings).
#include "engine/tuning_hook.h"

namespace lightcc {

Status TuningHook::apply(const Negotiator::Plan& plan, uint64_t cycle, std::vector<ResponsePtr>* batches,
                         bool* scheduled) {
  SettingsPtr next;
  LIGHTCC_RETURN_IF_ERROR(tuning_.next(plan.tune.data(), cycle, topo_.rank, pool_.streams(), &next));
  if (!next) return Status::OK();
  const FusionScheduler::Options& was = tuning_.live().fusion;
  const FusionScheduler::Options& o = next->fusion;
  if (o.strategy != was.strategy || o.threshold != was.threshold || o.bucket != was.bucket ||
      o.first_bucket != was.first_bucket) {
    // The old scheduler runs what it holds now, with this cycle's responses (under the old
    // settings); the new one starts empty. Every rank does this in the same cycle, so the
    // batches still match.
    *batches = fusion_.schedule(plan, true);
    *scheduled = true;
    tuning_.install(std::move(next));
    fusion_.rebuild();
    return Status::OK();
  }
  tuning_.install(std::move(next));
  return Status::OK();
}

}  // namespace lightcc
