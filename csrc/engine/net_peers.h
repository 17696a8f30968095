// Net peers: opens the NCCL net plugin (HARP), connects the peers init needs, dials the rest later.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "engine/peer_dialer.h"
#include "engine/topology.h"
#include "transport/link.h"
#include "transport/net/net_plugin.h"
#include "transport/rendezvous/store.h"

namespace lightcc {

// Loads the plugin (LIGHTCC_NET_PLUGIN, else the bundled HARP) unless *plugin is already loaded,
// and returns one Link per entry of `remote` (same order); each rank publishes its listen handle
// under `key`/<rank> and reads only the handles of the peers in `remote`. The links use
// *plugin, which must outlive them.
Status connectNetPeers(const Config& config, const InitOptions& options, int rank, int size,
                       const std::vector<int>& remote, rendezvous::Store& store, const std::string& key,
                       std::unique_ptr<net::NetPlugin>* plugin, std::vector<std::unique_ptr<Link>>* links);

// Of `remote` (ranks on other hosts, ascending), the ones channel `channel` connects at init: the
// world ring's neighbours, the 2D cross ring's (when LIGHT_2D_ALLREDUCE or the autotuner may use
// it) and, on channel 0, the negotiation tree's. Each part is symmetric (if I pick you, you
// pick me), so both ends of every pair connect at init.
std::vector<int> eagerPeers(const Config& config, const Topology& topo, int channel, const std::vector<int>& remote);

// Listens once more, for the remote peers dialed on first use, and learns every rank's such
// handle in one read (rank 0 gathers them under `key`). Every rank with remote peers calls it.
Status makeDialer(const Config& config, const InitOptions& options, int size, const std::vector<int>& remote,
                  const std::vector<std::string>& hosts, rendezvous::Store& store, const std::string& key,
                  std::unique_ptr<net::NetPlugin>* plugin, std::vector<Link*>* world,
                  std::unique_ptr<PeerDialer>* out);

}  // namespace lightcc
