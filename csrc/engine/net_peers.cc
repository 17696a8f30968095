// Net peers: plugin choice, handle exchange through the store, and connection setup.
#include "engine/net_peers.h"

#include "engine/mesh.h"
#include "transport/net/net_link.h"
#include "transport/rendezvous/store_collectives.h"

namespace lightcc {

Status connectNetPeers(const Config& config, const InitOptions& options, int rank, int size,
                       const std::vector<int>& remote, rendezvous::StoreClient& store, const std::string& key,
                       std::unique_ptr<net::NetPlugin>* plugin, std::vector<std::unique_ptr<Link>>* links) {
  if (!*plugin) {
    net::NetPluginOptions o;
    o.path = config.net_plugin.empty() ? options.bundled_net_plugin : config.net_plugin;
    o.job_secret = options.secret;
    o.log_level = config.log_level <= LogLevel::kDebug ? 5 : config.log_level <= LogLevel::kInfo ? 3 : 2;
    LIGHTCC_RETURN_IF_ERROR(net::NetPlugin::load(o, plugin).withContext(
        "rank " + std::to_string(rank) + " has peers on other hosts (first: rank " +
        std::to_string(remote.front()) + ") and needs the net plugin " + o.path));
  }
  auto exchange = [&](const std::string& mine, std::vector<std::string>* all) {
    return rendezvous::allgather(store, key, rank, size, mine, all, config.timeout_seconds);
  };
  return net::connectNetLinks(**plugin, rank, remote, exchange, config.timeout_seconds, links);
}

}  // namespace lightcc
