// Net peers: plugin choice, which peers init connects, handle exchange, and the dialer for the rest.
#include "engine/net_peers.h"

#include <algorithm>

#include "engine/negotiation_tree.h"
#include "engine/two_d_choice.h"
#include "transport/net/net_link.h"

namespace lightcc {
namespace {

Status loadPlugin(const Config& config, const InitOptions& options, int first_remote,
                  std::unique_ptr<net::NetPlugin>* plugin) {
  if (*plugin) return Status::OK();
  net::NetPluginOptions o;
  o.path = config.links.net_plugin.empty() ? options.bundled_net_plugin : config.links.net_plugin;
  o.job_secret = options.secret;
  const LogLevel level = config.diagnostics.log_level;
  o.log_level = level <= LogLevel::kDebug ? 5 : level <= LogLevel::kInfo ? 3 : 2;
  return net::NetPlugin::load(o, plugin).withContext("rank " + std::to_string(options.rank) +
                                                     " has peers on other hosts (first: rank " +
                                                     std::to_string(first_remote) + ") and needs the net plugin " +
                                                     o.path);
}

// My neighbours in the ring of `members` (ascending global ranks), if I am one of them.
void ringNeighbours(const std::vector<int>& members, int rank, std::vector<int>* out) {
  auto me = std::find(members.begin(), members.end(), rank);
  const int n = static_cast<int>(members.size());
  if (me == members.end() || n < 2) return;
  const int i = static_cast<int>(me - members.begin());
  out->push_back(members[static_cast<size_t>((i + 1) % n)]);
  out->push_back(members[static_cast<size_t>((i + n - 1) % n)]);
}

}  // namespace

Status connectNetPeers(const Config& config, const InitOptions& options, int rank, int size,
                       const std::vector<int>& remote, rendezvous::Store& store, const std::string& key,
                       std::unique_ptr<net::NetPlugin>* plugin, std::vector<std::unique_ptr<Link>>* links) {
  LIGHTCC_RETURN_IF_ERROR(loadPlugin(config, options, remote.front(), plugin));
  // Each rank publishes its listen handle and reads only the handles of the peers it connects to.
  auto exchange = [&](const std::string& mine, std::vector<std::string>* all) {
    LIGHTCC_RETURN_IF_ERROR(store.set(key + "/" + std::to_string(rank), mine));
    all->assign(static_cast<size_t>(size), std::string());
    for (int peer : remote) {
      LIGHTCC_RETURN_IF_ERROR(store.get(key + "/" + std::to_string(peer), &(*all)[static_cast<size_t>(peer)],
                                        config.timeout_seconds)
                                  .withContext("net handle of rank " + std::to_string(peer)));
    }
    return Status::OK();
  };
  return net::connectNetLinks(**plugin, rank, remote, exchange, config.timeout_seconds, links);
}

std::vector<int> eagerPeers(const Config& config, const Topology& topo, int channel, const std::vector<int>& remote) {
  std::vector<int> want;
  std::vector<int> world(static_cast<size_t>(topo.size));
  for (int r = 0; r < topo.size; ++r) world[static_cast<size_t>(r)] = r;
  ringNeighbours(world, topo.rank, &want);
  // The 2D cross ring, grouped as Mesh::buildHierComm groups the world (two_d_choice.h).
  const int g = twoDGroupSize(config, topo);
  if (g > 0) {
    std::vector<int> cross;
    for (int start = 0; start < topo.size; start += g) cross.push_back(start + topo.rank % g);
    ringNeighbours(cross, topo.rank, &want);
  }
  if (channel == 0) {
    const NegotiationTree t = NegotiationTree::build(topo.rank, topo.size, topo.host_index);
    const std::vector<int> cycle = t.cyclePeers();
    want.insert(want.end(), cycle.begin(), cycle.end());
    if (t.parent >= 0) want.push_back(t.parent);
    want.insert(want.end(), t.children.begin(), t.children.end());
  }
  std::vector<int> eager;
  for (int r : remote) {
    if (std::find(want.begin(), want.end(), r) != want.end()) eager.push_back(r);
  }
  return eager;
}

Status makeDialer(const Config& config, const InitOptions& options, int size, const std::vector<int>& remote,
                  const std::vector<std::string>& hosts, rendezvous::Store& store, const std::string& key,
                  std::unique_ptr<net::NetPlugin>* plugin, std::vector<Link*>* world,
                  std::unique_ptr<PeerDialer>* out) {
  LIGHTCC_RETURN_IF_ERROR(loadPlugin(config, options, remote.front(), plugin));
  net::NetPlugin& p = **plugin;
  std::string mine(net::NetPlugin::kHandleBytes, '\0');
  void* listen_comm = nullptr;
  if (int rc = p.listen(&mine[0], &listen_comm); rc != 0) {
    return net::NetPlugin::toStatus(rc, "rank " + std::to_string(options.rank) + " listening on " + p.info().device_name);
  }
  struct ListenGuard {  // closes the listen comm on the error paths below
    net::NetPlugin& plugin;
    void* comm;
    ~ListenGuard() {
      if (comm != nullptr) plugin.closeListen(comm);
    }
  } guard{p, listen_comm};
  std::vector<std::string> handles(static_cast<size_t>(size));
  const double timeout = config.timeout_seconds;
  LIGHTCC_RETURN_IF_ERROR(store.set(key + "/" + std::to_string(options.rank), mine));
  std::string all;
  if (options.rank == 0) {
    for (int r = 0; r < size; ++r) {
      std::string h = mine;
      if (r > 0) LIGHTCC_RETURN_IF_ERROR(store.get(key + "/" + std::to_string(r), &h, timeout));
      if (h.size() != net::NetPlugin::kHandleBytes) {
        return Status::PeerFailure("rank " + std::to_string(r) + " published a " + std::to_string(h.size()) +
                                   "-byte net handle");
      }
      all += h;
    }
    LIGHTCC_RETURN_IF_ERROR(store.set(key + "/all", all));
  } else {
    LIGHTCC_RETURN_IF_ERROR(store.get(key + "/all", &all, timeout));
  }
  if (all.size() != static_cast<size_t>(size) * net::NetPlugin::kHandleBytes) {
    return Status::PeerFailure("rank 0 published " + std::to_string(all.size()) + " bytes of net handles for " +
                               std::to_string(size) + " ranks");
  }
  for (int r : remote) {
    handles[static_cast<size_t>(r)] = all.substr(static_cast<size_t>(r) * net::NetPlugin::kHandleBytes,
                                                 net::NetPlugin::kHandleBytes);
  }
  *out = std::make_unique<PeerDialer>(p, options.rank, listen_comm, std::move(handles), hosts,
                                      config.timeout_seconds, world);
  guard.comm = nullptr;  // the dialer owns it now
  return Status::OK();
}

}  // namespace lightcc
