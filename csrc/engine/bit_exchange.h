// BitExchange: AND-allreduces the negotiation bit vector along a NegotiationTree, in O(log p) steps.
//
// DESIGN. Owned by the Negotiator, used by the engine's driving thread only. The receives for a
// cycle's first message from each cycle peer (host peers, fold partner, doubling partners) are
// posted when the previous cycle ends (post()), so an idle rank sees a peer start a cycle
// (incoming()) without a timer. allreduce() then runs the stages of negotiation_tree.h in order:
// a stage sends a snapshot of the running AND to its peers, waits for its receives and ANDs
// them in. Every message of a cycle has the same size; a link carries at most two per cycle in
// each direction (a cycle message, then the result from a leader or fold partner), and both ends
// post them in the same order, which is all the Link ordering guarantee needs.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/channel.h"
#include "engine/negotiation_tree.h"
#include "transport/link.h"

namespace lightcc {

class BitExchange {
 public:
  // `wait_ns`, if given, adds up the time allreduce() waits (the engine's negotiate_wait_ns).
  BitExchange(NegotiationTree tree, Channel& main, std::atomic<uint64_t>* wait_ns = nullptr);

  // Posts next cycle's receives of `words` uint64 words each.
  Status post(size_t words);
  // A cycle peer has sent its first message (or a link failed, see error()). Never blocks.
  bool incoming();
  // *bits becomes the AND of every rank's vector; blocks (with the host group's timeout).
  Status allreduce(std::vector<uint64_t>* bits, const std::string& what);
  const Status& error() const { return error_; }
  const NegotiationTree& tree() const { return tree_; }  // the coordinator round uses its edges too
  // Messages this rank sent in the last allreduce (for tests and stats).
  size_t lastSends() const { return last_sends_; }

 private:
  struct Slot {  // one posted receive
    int peer = -1;
    std::vector<uint64_t> buf;
    LinkRequest* req = nullptr;
    bool done = false;
  };
  struct Send {
    int peer;
    const uint64_t* data;
    size_t bytes;
    LinkRequest* req;
    bool done;
  };
  struct Stage {
    std::vector<int> send_to;
    std::vector<int> recv;  // indices into cycle_, or kFinal
  };
  static constexpr int kFinal = -1;

  Link* link(int peer) const { return main_.peer(peer); }
  int slotOf(int peer) const;
  Status postSlot(Slot& s, size_t words);
  Status testSlot(Slot& s);
  Status driveSends();
  bool step(std::vector<uint64_t>* acc);
  Status exchange(std::vector<uint64_t>* bits, const std::string& what);  // allreduce() but the clock
  std::string lateRanks() const;

  const NegotiationTree tree_;
  Channel& main_;
  std::atomic<uint64_t>* wait_ns_;
  std::vector<Slot> cycle_;  // one per tree_.cyclePeers(), in that order
  Slot final_;               // the result, from my leader or fold partner
  std::vector<Stage> stages_;
  std::vector<std::vector<uint64_t>> snapshots_;  // per stage: what it sent (kept while in flight)
  std::vector<Send> sends_;
  size_t stage_ = 0;
  bool stage_started_ = false;
  size_t last_sends_ = 0;
  Status error_;
};

}  // namespace lightcc
