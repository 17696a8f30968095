// Batch: one agreed (possibly fused) response with this rank's entries, ready for an executor.
#pragma once

#include <vector>

#include "engine/request.h"
#include "engine/tensor_queue.h"

namespace lightcc {

// Taken out of the negotiator's pending table on the driving thread, so whoever runs it (that
// thread or a stream worker) never reads negotiation state.
struct Batch {
  ResponsePtr response;
  // Parallel to response->names: this rank's entry for each tensor. One without a handle is not
  // here (this rank joined, or it has completed); entry() says which.
  std::vector<TensorEntry> entries;
  bool joined = false;  // this rank had joined when the batch was agreed
  // Settings in force in the cycle that agreed it (autotune may change them between cycles), so
  // every rank runs it the same way whenever its executor gets to it.
  bool two_d = true;            // take the 2D algorithms where the set has 2D communicators
  // Dense allreduces (allgathers: gathered outputs) smaller than this stay flat (two_d_choice.h).
  int64_t two_d_from_bytes = 0;
  int64_t topk_threshold = -1;  // top-k from this many bytes; -1 = ExecEnv's

  const TensorEntry* entry(size_t i) const { return entries[i].handle ? &entries[i] : nullptr; }
};

}  // namespace lightcc
