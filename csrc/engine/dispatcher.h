// Dispatcher: what the driving thread does with each agreed response — fences and errors itself,
// data collectives through the executors (channel 0's, or a stream's).
//
// DESIGN. Made by the driver (driver.h) once the mesh and the negotiator exist, and used only by
// the driving thread, once per response of the agreed plan in plan order, on every rank: ranks
// outside a response's set still count it, so every rank's stream numbering matches.
// Fences — barrier, join, process-set add/remove — first wait for every stream to go idle, so
// they see (and, for barrier, complete after) everything agreed before them.
#pragma once

#include "engine/executor_pool.h"
#include "engine/mesh.h"
#include "engine/negotiator.h"
#include "engine/process_sets.h"
#include "engine/tuning.h"

namespace lightcc {

class Dispatcher {
 public:
  // The parts it acts through; the driver owns them and outlives the dispatcher.
  Dispatcher(Negotiator& negotiator, ExecutorPool& pool, Mesh& mesh, ProcessSets& sets, const Tuning& tuning)
      : negotiator_(negotiator), pool_(pool), mesh_(mesh), main_(mesh.channel(0)), sets_(sets), tuning_(tuning) {}

  // One agreed response: its fence or completion here, or its batch to the executors.
  Status execute(const ResponsePtr& r);

 private:
  Status applyProcessSetChange(const Response& r);

  Negotiator& negotiator_;
  ExecutorPool& pool_;
  Mesh& mesh_;
  Channel& main_;  // the mesh's channel 0: which sets this rank is a member of
  ProcessSets& sets_;
  const Tuning& tuning_;
};

}  // namespace lightcc
