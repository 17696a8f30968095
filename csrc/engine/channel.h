// Channel: one independent path to every peer — a host-group view, links, communicators, scratch.
//
// DESIGN. Channel 0 belongs to whoever drives the engine (the background thread or a waiting
// caller, under the progress lock); channel c >= 1 to stream worker c (LIGHT_NUM_STREAMS). The
// Mesh builds and owns every channel; each is used by one thread at a time, so nothing in it is
// locked. Channels share no transport state: each has its own doorbell, counters, staging and
// shared-memory rings, and its own net comms (own HARP flows) to remote peers: those init
// connected, and the others made by its PeerDialer the first time an algorithm asks for them.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "algorithms/hierarchical.h"
#include "algorithms/set_comm.h"
#include "algorithms/sparse_allreduce.h"
#include "engine/peer_dialer.h"
#include "transport/link.h"
#include "transport/shm/host_group.h"

namespace lightcc {

// A fused top-k batch's residuals and velocities end to end (executor_topk.cc; its inputs go
// through the fusion buffer). Kept between steps, as large as the largest batch so far: fresh
// each step, these were hundreds of MB of pages faulted in and zeroed per step on a large model.
struct TopkStaging {
  std::vector<float> residual, velocity;
};

struct Channel {
  int index = 0;
  std::unique_ptr<shm::HostGroup> host;  // this channel's view of the host group
  std::vector<std::unique_ptr<Link>> owned_links;
  std::vector<Link*> world_links;  // by global rank; null for self and for peers not linked yet
  std::unique_ptr<PeerDialer> dialer;  // links to the other remote peers, on first use (null: none)
  std::map<int32_t, SetComm> comms;
  std::map<int32_t, HierComm> hier;  // 2D communicators of the sets where LIGHT_2D_ALLREDUCE applies
  std::map<int32_t, LeaderComm> leaders;  // host-leader communicators (LIGHTCC_RD_LEADERS) of multi-host sets
  std::vector<char> fusion_buffer;  // fused batches' inputs, dense and top-k; grown, never shrunk
  SparseScratch topk_scratch;
  TopkStaging topk_staging;

  // The link to a global rank, dialed now if init did not make it. Null only for self.
  Link* peer(int rank) {
    Link* l = world_links[static_cast<size_t>(rank)];
    return l != nullptr || !dialer ? l : dialer->link(rank);
  }
};

}  // namespace lightcc
