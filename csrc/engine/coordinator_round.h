// CoordinatorRound: the negotiation's round trip through rank 0 — uncached requests up the tree, responses down.
//
// DESIGN. Owned by the Negotiator (negotiator.h), used by the driving thread only, in the cycles
// whose bit vector says someone has uncached work, a mismatch, a join, or rank 0 has stalled
// tensors to fail; every rank joins those cycles' round. Rank 0 holds the Coordinator (its
// table of submitted requests, coordinator.h) and the stall inspector's pending failures.
// Wire format and the checks a parent makes of its children's bundles: coordinator_round.cc.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "engine/channel.h"
#include "engine/coordinator.h"
#include "engine/negotiation_tree.h"
#include "engine/request.h"
#include "engine/timeline.h"

namespace lightcc {

class CoordinatorRound {
 public:
  CoordinatorRound(const NegotiationTree& tree, int world_size, Channel& main, Timeline& timeline);

  // One round: this rank's requests `mine` up the tree; every rank's agreed responses appended to *responses.
  Status run(const std::vector<Request>& mine, std::vector<ResponsePtr>* responses);
  // Rank 0's stall inspector: warns of, or fails, tensors some ranks never submitted; sets
  // *want_cycle when failures wait for the next round.
  void checkStalls(std::chrono::steady_clock::time_point now, const Config& config, bool* want_cycle);
  bool stallsPending() const { return !stall_responses_.empty(); }
  bool holdsRequests() const { return coordinator_ && !coordinator_->empty(); }  // rank 0 waits on peers

 private:
  Status sendBytes(int peer, const std::string& bytes);
  Status recvBytes(int peer, std::string* bytes);
  Status gatherRequests(const std::vector<Request>& mine, std::string* bundle);
  Status coordinate(const std::string& bundle, std::vector<Response>* made);

  const NegotiationTree& tree_;
  Channel& main_;
  Timeline& timeline_;
  std::unique_ptr<Coordinator> coordinator_;  // rank 0 only
  std::vector<Response> stall_responses_;     // rank 0: stalled tensors to fail next round
};

}  // namespace lightcc
