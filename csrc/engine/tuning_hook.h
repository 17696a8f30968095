// TuningHook: a new tuning generation the plan agreed (HOROVOD_AUTOTUNE), applied before the cycle's fusion.
//
// DESIGN. Owned by the driver (driver.h), used by its driving thread once per cycle with
// autotune on. Every rank applies the same agreed words in the same cycle, so the settings
// (tuning.h) and the batches they shape stay identical everywhere. When the fusion options
// change, the old scheduler runs everything it holds with this cycle's responses (under the old
// settings) and the FusionPolicy starts an empty one.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/executor_pool.h"
#include "engine/fusion_policy.h"
#include "engine/negotiator.h"
#include "engine/tuning.h"

namespace lightcc {

class TuningHook {
 public:
  TuningHook(Tuning& tuning, FusionPolicy& fusion, const ExecutorPool& pool, const Topology& topo)
      : tuning_(tuning), fusion_(fusion), pool_(pool), topo_(topo) {}

  // Installs the generation `plan` names, if new. Sets *scheduled when it already scheduled
  // this cycle's `batches` (the fusion options changed).
  Status apply(const Negotiator::Plan& plan, uint64_t cycle, std::vector<ResponsePtr>* batches, bool* scheduled);

 private:
  Tuning& tuning_;
  FusionPolicy& fusion_;
  const ExecutorPool& pool_;
  const Topology& topo_;  // the rank that reports words not valid here
};

}  // namespace lightcc
