// Net peers: opens the NCCL net plugin (HARP) and connects this rank to ranks on other hosts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "transport/link.h"
#include "transport/net/net_plugin.h"
#include "transport/rendezvous/store_client.h"

namespace lightcc {

struct InitOptions;

// Loads the plugin (LIGHTCC_NET_PLUGIN, else the bundled HARP) unless *plugin is already loaded,
// and returns one Link per entry of `remote` (same order); listen handles travel through the
// rendezvous store under `key` (one key per channel, so each call makes fresh comms). The links
// use *plugin, which must outlive them.
Status connectNetPeers(const Config& config, const InitOptions& options, int rank, int size,
                       const std::vector<int>& remote, rendezvous::StoreClient& store, const std::string& key,
                       std::unique_ptr<net::NetPlugin>* plugin, std::vector<std::unique_ptr<Link>>* links);

}  // namespace lightcc
