// AgreedTensors: the tensors of this cycle's plan, in plan order, as dispatch takes them.
//
// Owned by the Negotiator (negotiator.h) and used by the driving thread only. The negotiation
// adds each agreed response's tensor id (-1: a tensor this rank never submitted) in plan order;
// dispatch then takes this rank's entries response by response, which mostly follows that order,
// so take() tries the next agreed id before it hashes a name.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/batch.h"
#include "engine/tensor_table.h"
#include "engine/timeline.h"

namespace lightcc {

class AgreedTensors {
 public:
  void clear() { ids_.clear(); }
  void add(TensorId id) { ids_.push_back(id); }
  // The plan is final: its pending entries are submitted (held ones must not announce themselves
  // again), and their NEGOTIATE spans end when `trace`.
  void markSubmitted(TensorTable& tensors, const std::vector<ResponsePtr>& responses, Timeline& timeline, bool trace);
  // This rank's entries of agreed response `r`, taken out of `tensors`.
  Batch take(TensorTable& tensors, const ResponsePtr& r);
  // This rank called join() and waits for the others (every batch says so until the join is done).
  bool joined() const { return joined_; }
  void setJoined(bool joined) { joined_ = joined; }

 private:
  std::vector<TensorId> ids_;  // parallel to the plan's responses
  size_t hint_ = 0;            // take()'s position in ids_
  bool joined_ = false;
};

}  // namespace lightcc
