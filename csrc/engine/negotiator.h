// Negotiator: turns what every rank has queued into one agreed plan per cycle, the same on all.
//
// DESIGN. Owned by the engine and used only by the driving thread (the background thread, or a
// caller holding the progress lock). A cycle (negotiate()):
//   1. drain the queue into the tensor table; a request that repeats a cached one announces its
//      cache bit, any other goes to the coordinator;
//   2. AND-allreduce a bit vector with every rank over channel 0's links, through the host then
//      the hosts' leaders (negotiation_tree.h, bit_exchange.h; layout in cycle_bits.h): status
//      votes, "ready" bits per cache entry, "valid" bits per entry;
//   3. take the responses every rank has ready from the cache, in bit order (the fast path); if
//      anyone has uncached work, a mismatch or joined, run the coordinator round trip through
//      rank 0 along the tree's edges (coordinator_round.h), whose answer every rank then
//      inserts into its cache in list order, so all caches stay identical without being sent.
// Control ops (barrier, join, process-set changes) are never cached (isCacheable: data ops
// only), so they always take step 3's coordinator round trip, which every rank joins as soon
// as any rank has uncached work (the AND of word 0). A change only some ranks submit (a
// member-only process set, process_sets.h) therefore reaches rank 0 from its submitters while
// the others join the same cycles with nothing to send, and every rank gets its response.
// Agreed tensors stay pending here until dispatch takes them (take()) or completes them
// (complete()). Peers' first cycle messages are received into buffers posted at the end of the
// previous cycle, so an idle engine notices a peer's cycle without a timer (incoming()).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "engine/agreed_tensors.h"
#include "engine/autotuner.h"
#include "engine/batch.h"
#include "engine/bit_exchange.h"
#include "engine/channel.h"
#include "engine/coordinator_round.h"
#include "engine/cycle_bits.h"
#include "engine/mesh.h"
#include "engine/response_cache.h"
#include "engine/stats.h"
#include "engine/tensor_queue.h"
#include "engine/tensor_table.h"
#include "engine/timeline.h"

namespace lightcc {

class Negotiator {
 public:
  using Clock = std::chrono::steady_clock;
  // This rank's votes for the cycle; each is combined across ranks by the AND.
  struct Votes {
    bool asked_shutdown = false;  // this rank asked to shut down
    bool force_shutdown = false;  // its shutdown grace has run out
    bool want_flush = false;      // run held (bucketed) tensors now
    bool device_ready = true;     // few enough GPU batches still running here (LIGHT_DEVICE_INFLIGHT)
    // HOROVOD_AUTOTUNE: rank 0's tuning words (autotuner.h); every other rank votes all ones.
    std::array<uint64_t, kTuneWords> tune{};
  };
  // The agreed outcome, identical on every rank. Reused every cycle (its capacity stays).
  struct Plan {
    std::vector<ResponsePtr> responses;  // in execution order
    size_t cached = 0;                   // how many came from the cache
    bool stop = false;                   // every rank stops now (shutdown)
    bool flush = false;                  // run held tensors now
    bool device_ready = true;            // every rank may start another GPU batch
    bool slow = false;                   // the coordinator was needed
    bool shutdown_pending = false;       // some rank asked to shut down
    std::array<uint64_t, kTuneWords> tune{};  // HOROVOD_AUTOTUNE: rank 0's tuning words
  };

  Negotiator(const Config& config, const Topology& topo, Channel& main, TensorQueue& queue, Timeline& timeline,
             EngineStats& stats);

  Status start();  // posts the receives of the first cycle
  // A peer has sent its cycle message (or a link failed): this rank must run a cycle.
  bool incoming();
  Status negotiate(const Votes& votes, Plan* plan);
  // After the plan ran: recycles tensor ids, posts the next cycle's receives.
  Status finishCycle();

  // Dispatch: this rank's entries of an agreed response, or one tensor's completion.
  Batch take(const ResponsePtr& r);
  void complete(int32_t set, const std::string& name, const Status& st, HandleResult result = {});
  // A process set was removed: its cache entries go and its pending tensors fail.
  void dropSet(int32_t id);
  void failAll(const Status& st);
  bool joined() const { return agreed_.joined(); }
  void joinDone() {
    agreed_.setJoined(false);
    if (main_.host) main_.host->setDirectAway(false);
  }

  // Stall inspector (rank 0 warns or fails stalled tensors; everyone renegotiates old cached
  // ones so rank 0 can name the missing ranks). Sets *want_cycle when a cycle must run.
  void maintenance(Clock::time_point now, bool* want_cycle);
  // Something here waits on peers: tensors pending, or rank 0's coordinator holds requests.
  // Every negotiation message of this rank comes from its own host (shared memory, which rings
  // the doorbell): one host, or not its host's leader.
  bool hearsOnlyHost() const { return exchange_.tree().hosts == 1 || !exchange_.tree().isLeader(); }
  bool anyWork() const { return tensors_.anyPending() || round_.holdsRequests(); }
  // Is a caller blocked on this pending tensor? (The fusion flush vote.)
  bool waitedOn(int32_t set, const std::string& name) const;
  uint64_t cycle() const { return cycle_; }

 private:
  Status postReceives();
  // The coordinator round (coordinator_round.h) with this rank's uncached requests.
  Status slowPath(std::vector<ResponsePtr>* responses);
  void classifyNewEntries();
  bool dropInvalid(const std::vector<uint64_t>& bits, const CycleBits::Layout& l, bool all);
  void takeReady(const std::vector<uint64_t>& bits, const CycleBits::Layout& l, Plan* plan);
  void admitCoordinated(Plan* plan, bool any_joined);

  const Config& config_;
  const Topology topo_;
  Channel& main_;
  TensorQueue& queue_;
  Timeline& timeline_;

  TensorTable tensors_;              // every tensor by id; the pending ones with their entries
  ResponseCache cache_;
  std::vector<TensorEntry> fresh_;   // this cycle's drained queue (its capacity is reused)
  AgreedTensors agreed_;             // the plan's tensors, for dispatch; whether this rank joined
  uint64_t cycle_ = 0;
  CycleBits bits_;                   // this rank's bit vector
  BitExchange exchange_;             // the bit vector's tree AND (over the negotiation tree)
  CoordinatorRound round_;           // the slow path, along exchange_'s tree: after it
};

}  // namespace lightcc
