// Mesh: who the peers are and how to reach them — rendezvous, topology, shared memory, links.
//
// DESIGN. Built once per init (Mesh::build) and torn down whole with the engine, so a new world
// (elastic training) is a new Mesh. Steps: every rank meets at rank 0's store (job secret,
// settings fingerprint), the hosts are ordered by their first rank, each rank creates its
// shared-memory area and maps its host peers' (then unlinks its own, so a crash leaks nothing),
// and opens net links (the NCCL net plugin, HARP) to the ranks on other hosts that the
// configured algorithms need from the start (net_peers.h: eagerPeers) — once per channel; each
// channel's PeerDialer links any other remote peer on first use. Through rank 0's store passes
// nothing world-wide the algorithms do not need: each rank reads rank 0's settings, one list of
// host ids, its host peers' segment names and its peers' listen handles (docs/scale.md).
// Afterwards the Mesh owns the channels and makes each process set's communicators on every
// channel (addSet/eraseSet, on the engine's driving thread). Nothing here negotiates or runs
// collectives; the Negotiator and the Executors borrow the channels.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "engine/channel.h"
#include "engine/net_wakeups.h"
#include "engine/topology.h"
#include "transport/shm/rank_area.h"
#include "transport/shm/segment.h"
#include "transport/net/net_plugin.h"

namespace lightcc {

namespace rendezvous {
class Store;
}

class Mesh {
 public:
  // Meets every rank and connects them. `abort` (outliving the Mesh) cuts channel 0's waits short.
  static Status build(const InitOptions& options, const Config& config, const std::atomic<bool>* abort,
                      std::unique_ptr<Mesh>* out);
  ~Mesh();
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  const Topology& topology() const { return topo_; }
  const std::vector<std::string>& hosts() const { return hosts_; }  // host id of every rank
  int channels() const { return static_cast<int>(channels_.size()); }
  Channel& channel(int c) { return *channels_[static_cast<size_t>(c)]; }
  shm::HostGroup& host() const { return *channels_.front()->host; }

  // Links this rank holds over all channels: to other hosts (net) and to this host (shm).
  int netLinks() const { return countLinks(false); }
  int shmLinks() const { return countLinks(true); }

  // Communicators of a process set on every channel (and its 2D pair where that applies).
  void addSet(int32_t id, const std::vector<int>& ranks);
  void eraseSet(int32_t id);

 private:
  Mesh(const InitOptions& options, const Config& config) : options_(options), config_(config) {}
  Status connect(const std::atomic<bool>* abort);
  Status mapSharedMemory(rendezvous::Store* store, const std::vector<int>& local, shm::RankAreaLayout* layout,
                         std::vector<std::unique_ptr<shm::ShmSegment>>* segments);
  Status connectChannel(Channel& ch, rendezvous::Store* store);
  SetComm makeSetComm(const Channel& ch, int32_t id, const std::vector<int>& ranks) const;
  void buildHierComm(Channel& ch, int32_t id, const std::vector<int>& ranks) const;
  // After buildHierComm (a LeaderComm shares the 2D group when there is one).
  void buildLeaderComm(Channel& ch, int32_t id, const std::vector<int>& ranks) const;
  int countLinks(bool local) const;

  const InitOptions options_;
  const Config config_;
  Topology topo_;
  std::vector<std::string> hosts_;
  std::unique_ptr<net::NetPlugin> net_plugin_;  // declared before the channels whose links use it
  std::vector<std::unique_ptr<Channel>> channels_;
  // After channels_ (destroyed first): the channels' doorbells rung by the net plugin's completions.
  std::vector<std::unique_ptr<NetWakeups::Registration>> net_wakeups_;
};

}  // namespace lightcc
