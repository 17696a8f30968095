// Net peers: opens the NCCL net plugin (HARP) and connects this rank to ranks on other hosts.
#pragma once

#include <memory>
#include <vector>

#include "common/config.h"
#include "engine/engine.h"
#include "transport/link.h"
#include "transport/rendezvous/store_client.h"

namespace lightcc {

// One Link per entry of `remote` (same order). Listen handles travel through the store.
Status connectNetPeers(const Config& config, const InitOptions& options, int rank, int size,
                       const std::vector<int>& remote, rendezvous::StoreClient& store,
                       std::vector<std::unique_ptr<Link>>* links);

}  // namespace lightcc
