// Net peers: placeholder-free wiring to the HARP plugin lives in transport/net (see net_link.h).
#include "engine/net_peers.h"

namespace lightcc {

Status connectNetPeers(const Config&, const InitOptions&, int rank, int, const std::vector<int>& remote,
                       rendezvous::StoreClient&, std::vector<std::unique_ptr<Link>>*) {
  return Status::PreconditionFailed("rank " + std::to_string(rank) + " has peers on other hosts (first: rank " +
                                    std::to_string(remote.front()) +
                                    ") but this build has no network transport");
}

}  // namespace lightcc
