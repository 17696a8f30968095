// SetComm: a process set as the algorithms see it — members, links, host group, sync counters.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/link.h"
#include "transport/net/peer_probe.h"
#include "transport/shm/host_group.h"

namespace lightcc {

// Makes a link to a global rank on first use (the engine's PeerDialer); algorithms see only this.
class LinkSource {
 public:
  virtual ~LinkSource() = default;
  // Never null for another rank: a peer that cannot be reached gets a link that fails every call.
  virtual Link* link(int global_rank) = 0;
  // Every remote rank's listen address, linked yet or not: a peer check must reach the lost
  // host even from a rank that never needed a link to it.
  virtual std::vector<net::PeerTarget> peerTargets() const = 0;
};

// Owned by the engine thread. Algorithms reach peers only through link(m) (any host) or, when
// every member shares this host, through the host group's staging areas and counters.
struct SetComm {
  int32_t id = 0;
  std::vector<int> ranks;        // global ranks, ascending
  int me = -1;                   // my index in ranks, -1 if not a member
  const shm::HostGroup* host = nullptr;
  std::vector<int> local_index;  // per member: index in the host group, -1 on another host
  // Per member: null for me and for peers not linked yet; read through link(m).
  mutable std::vector<Link*> links;
  LinkSource* dialer = nullptr;  // the channel's, for peers init did not link (null: all linked)
  bool all_local = false;
  uint64_t barrier_count = 0;    // my counter for this set's slot (shared-memory barriers)
  size_t chunk_bytes = 4 << 20;  // one staging slot
  size_t oneshot_bytes = 0;      // LIGHTCC_SHM_ONESHOT_BYTES
  mutable uint64_t sent_bytes = 0;  // posted on `links` by runP2P (statistics; the owner thread's)

  int size() const { return static_cast<int>(ranks.size()); }
  bool member() const { return me >= 0; }
  // Member m's link, connected on first use (LinkSource). Never null for m != me: a peer that
  // cannot be reached yields a link whose every call fails with an error naming it.
  Link* link(int m) const;

  // Every member arrives before any leaves; shared-memory members only.
  Status shmBarrier(const std::string& what);
  // Before writing my staging: peers have finished reading what a single-barrier op left there.
  Status claimStaging() const { return host->waitStagingFree(); }
  // My member's staging slot (0 or 1) and a peer member's.
  char* staging(int member, int slot) const {
    return host->staging(local_index[member]) + static_cast<size_t>(slot) * chunk_bytes;
  }
  char* meta(int member) const { return host->meta(local_index[member]); }
};

// A point-to-point step: all posted together, then driven to completion.
struct P2POp {
  Link* link;
  bool send;
  void* buf;
  size_t bytes;
};
Status runP2P(const SetComm& comm, std::vector<P2POp>& ops, const std::string& what);

// A link's error naming its peer once (net links already do; shared-memory ones get it here).
Status namingPeer(const Status& st, const Link& link);
// Waits until `progress` returns true (runP2P's wait, for callers with their own schedule;
// `doorbell_only`: every link it drives rings this rank's doorbell, so it may sleep until rung):
// a timeout names what `pending` lists, and a failure (the wait's, else `error`, which progress
// sets before returning true) goes through the peer check that names a lost peer.
Status driveLinks(const SetComm& comm, bool doorbell_only, const std::function<bool()>& progress,
                  const std::string& what, const std::function<std::string()>& pending, const Status& error);

}  // namespace lightcc
