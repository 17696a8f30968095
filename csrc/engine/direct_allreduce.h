// DirectAllreduce: a caller's synchronous small allreduce on a one-host job, run in its own thread in one step.
//
// DESIGN. The engine's way (queue, a negotiation cycle, then the one-step shared-memory
// allreduce) costs two sync points and a cycle of bookkeeping, several times what the data
// takes for a few KiB. Synchronous single-tensor allreduces of host memory (the NumPy front's,
// `run_now`) and barriers on a job whose ranks share one host try this first: a lockstep step of the
// DirectExchange (transport/shm/direct_exchange.h) both agrees that every rank runs the same
// operation and carries every rank's input; each rank then reduces all inputs in rank order,
// as the engine's one-step path does, so results are identical on every rank and to that path.
// Anything the step cannot settle — a different tensor, a rank with that name in flight, a
// joined or late rank, a timeline to record — is declined and the caller enqueues as always,
// so the engine's negotiation keeps every semantic (errors, joins, stall reports). A rank
// whose steps keep running out of window (its peers call these ops asynchronously, or never
// arrive in time) stops taking them; its peers then wait out their windows and stop too.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "engine/stats.h"
#include "engine/tensor_queue.h"
#include "transport/shm/direct_exchange.h"

namespace lightcc {

class DirectAllreduce {
 public:
  // `host` (channel 0's view, with a direct area) outlives this object.
  DirectAllreduce(const shm::HostGroup& host, const Config& config, EngineStats& stats);

  // Runs entry `e` (an allreduce of host memory) if every rank's step agrees; *done false: the
  // caller must enqueue it. `ready`: this rank may take the step (the engine's checks passed).
  Status run(const TensorEntry& e, bool ready, bool* done);
  // Steps in a row declined by this rank's window after which it stops taking them.
  static constexpr int kMaxWaitedOut = 16;

 private:
  const shm::HostGroup& host_;
  EngineStats& stats_;
  std::mutex mu_;  // one step at a time per rank
  shm::DirectExchange exchange_;
  int waited_out_ = 0;
  bool off_ = false;
};

}  // namespace lightcc
