// Mesh: rendezvous through rank 0's store or one handed in, map host peers, connect remote peers.
#include "engine/mesh.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "common/logging.h"
#include "engine/net_peers.h"
#include "engine/two_d_choice.h"
#include "transport/rendezvous/store_client.h"
#include "transport/rendezvous/store_collectives.h"
#include "transport/rendezvous/store_server.h"
#include "transport/shm/rank_area.h"
#include "transport/shm/shm_link.h"

namespace lightcc {
namespace {

// The host's online cores (what os.cpu_count() says), not this process's affinity mask: with
// LIGHTCC_BIND=core each rank sees one core although every rank has one of its own.
int onlineCores() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

// Settings every rank must share, one "NAME=value" per flag, so a mismatch is named.
std::string fingerprint(const Config& c) {
  std::ostringstream os;
  os << "HOROVOD_FUSION_THRESHOLD=" << c.fusion.threshold_bytes << ";HOROVOD_CACHE_CAPACITY="
     << c.fusion.cache_capacity << ";LIGHTCC_SHM_CHUNK_BYTES=" << c.shm.chunk_bytes
     << ";LIGHTCC_SHM_ONESHOT_BYTES=" << c.shm.oneshot_bytes
     << ";LIGHTCC_SHM_RING_BYTES=" << c.shm.ring_bytes
     << ";HOROVOD_DYNAMIC_PROCESS_SETS=" << c.dynamic_process_sets
     << ";LIGHTCC_FORCE_RING=" << c.links.force_ring << ";LIGHTCC_RD_ALLREDUCE_BYTES=" << c.links.rd_allreduce_bytes
     << ";LIGHTCC_RD_LEADERS=" << c.links.rd_leaders
     << ";LIGHT_2D_ALLREDUCE=" << twoDModeName(c.two_d)
     << ";LIGHT_INTRA_SIZE=" << c.intra_size << ";LIGHT_TOPK_ALLREDUCE=" << c.topk.enabled
     << ";LIGHT_TOPK_THRESHOLD=" << c.topk.threshold_bytes << ";LIGHT_TOPK_DENSITY=" << c.topk.density
     << ";LIGHT_TOPK_MIN_DIMS=" << c.topk.min_dims
     << ";LIGHT_TOPK_WARMUP_STEPS=" << c.topk.warmup_steps << ";LIGHT_TOPK_WARMUP=" << c.topk.warmup_decay
     << ";LIGHT_TOPK_MOMENTUM=" << c.topk.momentum << ";LIGHT_TOPK_ERROR_FEEDBACK=" << c.topk.error_feedback
     << ";LIGHT_NUM_STREAMS=" << c.fusion.num_streams
     << ";LIGHT_FUSION_STRATEGY=" << fusionStrategyName(c.fusion.strategy)
     << ";LIGHT_FUSION_FIRST_BUCKET=" << c.fusion.first_bucket_bytes << ";HOROVOD_AUTOTUNE=" << c.autotune.enabled
     << ";LIGHT_DEVICE_INFLIGHT=" << c.device.inflight
     << ";LIGHTCC_DEVICE_EXECUTOR=" << (c.device.executor_on_host ? "host" : "auto");
  return os.str();
}

Status compareFingerprints(const std::string& mine, const std::string& theirs, int rank) {
  if (mine == theirs) return Status::OK();
  auto a = split(mine, ';'), b = split(theirs, ';');
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] != b[i]) {
      return Status::InvalidArgument("ranks disagree on a setting that must match: this rank has " +
                                     a[i] + " but rank " + std::to_string(rank) + " has " + b[i] +
                                     " (set it the same on every rank)");
    }
  }
  return Status::InvalidArgument("ranks run different lightcc versions (settings differ)");
}

// Every rank's settings against rank 0's: one value read per rank. A rank that disagrees says so
// under "settings/why" (the first one to take the ticket), so every rank can name the setting.
Status checkSettings(const InitOptions& o, const Config& config, rendezvous::Store& store) {
  const std::string mine = fingerprint(config);
  if (o.rank == 0) return store.set("settings", mine);
  std::string theirs;
  LIGHTCC_RETURN_IF_ERROR(store.get("settings", &theirs, config.timeout_seconds));
  Status agreed = compareFingerprints(mine, theirs, 0);
  if (agreed.ok()) return agreed;
  int64_t ticket = 0;
  if (store.add("settings/bad", 1, &ticket).ok() && ticket == 1) {
    (void)store.set("settings/why", "rank " + std::to_string(o.rank) + ": " + agreed.message());
  }
  return agreed;
}

// Every rank's host id, checking that all run with the same settings. Rank 0 gathers the host
// ids and publishes them as one value, so each rank makes one read of O(p) bytes (the topology
// needs every host id) instead of p reads of every rank's settings.
Status meet(const InitOptions& o, const Config& config, rendezvous::Store& store, std::vector<std::string>* hosts) {
  const double timeout = config.timeout_seconds;
  Status agreed = checkSettings(o, config, store);
  LIGHTCC_RETURN_IF_ERROR(store.set("host/" + std::to_string(o.rank), o.hostname));
  std::string all;
  if (o.rank == 0) {
    for (int r = 0; r < o.size; ++r) {
      std::string h = o.hostname;
      if (r > 0) LIGHTCC_RETURN_IF_ERROR(store.get("host/" + std::to_string(r), &h, timeout));
      all += (r > 0 ? "\n" : "") + h;
    }
    LIGHTCC_RETURN_IF_ERROR(store.set("hosts", all));
  } else {
    LIGHTCC_RETURN_IF_ERROR(store.get("hosts", &all, timeout));
  }
  auto parts = split(all, '\n');
  if (static_cast<int>(parts.size()) != o.size) {
    return Status::PeerFailure("rank 0 published " + std::to_string(parts.size()) + " host ids for " +
                               std::to_string(o.size) + " ranks");
  }
  *hosts = std::move(parts);
  // Every rank has checked its settings once all pass this barrier; only then may rank 0 (whose
  // store the others read) leave with an error. Rank 0 may close its store before a peer reads
  // the verdict: a rank that found the disagreement itself reports that, not the reset.
  Status passed = rendezvous::barrier(store, "checked", o.size, timeout);
  if (!agreed.ok()) return agreed;
  LIGHTCC_RETURN_IF_ERROR(passed);
  int64_t bad = 0;
  LIGHTCC_RETURN_IF_ERROR(store.add("settings/bad", 0, &bad));
  if (bad == 0) return Status::OK();
  std::string why;
  LIGHTCC_RETURN_IF_ERROR(store.get("settings/why", &why, timeout));
  return Status::InvalidArgument(why);
}

// Hosts ordered by their first rank; local ranks ascending.
Topology topologyOf(const InitOptions& o, const std::vector<std::string>& hosts, std::vector<int>* local) {
  Topology t;
  t.rank = o.rank;
  t.size = o.size;
  std::vector<std::string> host_order;
  std::map<std::string, std::vector<int>> by_host;
  std::map<std::string, int> index_of;
  for (int r = 0; r < o.size; ++r) {
    if (!by_host.count(hosts[r])) {
      index_of[hosts[r]] = static_cast<int>(host_order.size());
      host_order.push_back(hosts[r]);
    }
    by_host[hosts[r]].push_back(r);
    t.host_index.push_back(index_of[hosts[r]]);
  }
  *local = by_host[o.hostname];
  t.local_size = static_cast<int>(local->size());
  t.local_rank = static_cast<int>(std::find(local->begin(), local->end(), o.rank) - local->begin());
  t.cross_size = 0;
  t.cross_rank = 0;
  for (const auto& h : host_order) {
    const auto& members = by_host[h];
    if (static_cast<int>(members.size()) > t.local_rank) {
      if (h == o.hostname) t.cross_rank = t.cross_size;
      ++t.cross_size;
    }
    if (members.size() != local->size()) t.homogeneous = false;
  }
  return t;
}

}  // namespace

Mesh::~Mesh() = default;

Status Mesh::build(const InitOptions& options, const Config& config, const std::atomic<bool>* abort,
                   std::unique_ptr<Mesh>* out) {
  std::unique_ptr<Mesh> mesh(new Mesh(options, config));
  LIGHTCC_RETURN_IF_ERROR(mesh->connect(abort));
  *out = std::move(mesh);
  return Status::OK();
}

Status Mesh::connect(const std::atomic<bool>* abort) {
  const int rank = options_.rank, size = options_.size;
  const double timeout = config_.timeout_seconds;
  std::unique_ptr<rendezvous::StoreServer> server;
  std::unique_ptr<rendezvous::StoreClient> client;
  rendezvous::Store* store = options_.store.get();  // handed in (torch's): no server of our own
  hosts_.assign(size, options_.hostname);
  if (size > 1) {
    if (options_.secret.empty()) {
      return Status::InvalidArgument(
          "no job secret: launch with lightccrun or mpirun+mpi4py, or set LIGHTCC_JOB_SECRET on every rank");
    }
    if (store == nullptr) {
      if (rank == 0) {
        LIGHTCC_RETURN_IF_ERROR(rendezvous::StoreServer::start("", options_.rendezvous_port, options_.secret,
                                                               options_.generation, &server)
                                    .withContext("rank 0 cannot serve the rendezvous store"));
      }
      LIGHTCC_RETURN_IF_ERROR(rendezvous::StoreClient::connect(options_.rendezvous_host, options_.rendezvous_port,
                                                               options_.secret, options_.generation, rank,
                                                               timeout, &client));
      store = client.get();
    }
    LIGHTCC_RETURN_IF_ERROR(meet(options_, config_, *store, &hosts_));
  }
  std::vector<int> local;
  topo_ = topologyOf(options_, hosts_, &local);

  std::vector<std::unique_ptr<shm::ShmSegment>> segments;
  shm::RankAreaLayout layout;
  LIGHTCC_RETURN_IF_ERROR(mapSharedMemory(store, local, &layout, &segments));
  const int streams = static_cast<int>(config_.fusion.num_streams);
  shm::WaitOptions wait;
  const int cores = onlineCores();
  wait.oversubscribed = topo_.local_size > cores;
  // Oversubscribed, a sync point needs every local rank to get a core once; a waiter's spin
  // yields, so it may last as many rounds as ranks share a core before a futex sleep (whose
  // wake-up, on a busy core, costs far more) without taking time from the ranks it waits for.
  wait.spin_us = config_.shm.spin_us * (wait.oversubscribed ? (topo_.local_size + cores - 1) / cores : 1);
  wait.timeout_s = timeout;
  wait.peer_check_s = peerCheckSeconds(config_);
  wait.host_id = options_.hostname;
  auto main = std::make_unique<Channel>();
  main->host = std::make_unique<shm::HostGroup>(topo_.local_rank, local, std::move(segments), layout, wait);
  main->host->setAbortFlag(abort);
  channels_.push_back(std::move(main));
  for (int s = 1; streams > 1 && s <= streams; ++s) {
    auto ch = std::make_unique<Channel>();
    ch->index = s;
    ch->host = channels_.front()->host->channel(s);
    channels_.push_back(std::move(ch));
  }
  for (auto& ch : channels_) LIGHTCC_RETURN_IF_ERROR(connectChannel(*ch, store));
  net::CompletionHook* hook = net_plugin_ != nullptr ? &net_plugin_->completionHook() : nullptr;
  if (hook != nullptr && hook->supported() && !hook->installed()) {
    for (auto& ch : channels_) net_wakeups_.push_back(std::make_unique<NetWakeups::Registration>(ch->host.get()));
    hook->install(&NetWakeups::ring, nullptr);
  }

  if (size > 1) {
    // Rank 0 keeps serving its store until every rank has finished with it.
    LIGHTCC_RETURN_IF_ERROR(rendezvous::barrier(*store, "connected", size, timeout));
    if (options_.store != nullptr) return Status::OK();  // a store handed in outlives init
    LIGHTCC_RETURN_IF_ERROR(store->set("bye/" + std::to_string(rank), "1"));
    if (rank == 0) {
      std::vector<std::string> keys;
      for (int r = 0; r < size; ++r) keys.push_back("bye/" + std::to_string(r));
      LIGHTCC_RETURN_IF_ERROR(store->wait(keys, timeout));
    }
  }
  return Status::OK();
}

// Shared memory: each rank creates its area, peers map it, then the owner unlinks the name.
// One channel for the driving thread; with streams, one more per stream, each with staging.
Status Mesh::mapSharedMemory(rendezvous::Store* store, const std::vector<int>& local,
                             shm::RankAreaLayout* layout, std::vector<std::unique_ptr<shm::ShmSegment>>* segments) {
  const int rank = options_.rank, size = options_.size;
  const double timeout = config_.timeout_seconds;
  const int streams = static_cast<int>(config_.fusion.num_streams);
  if (topo_.local_size > shm::kMaxLocalRanks) {
    return Status::InvalidArgument("rank " + std::to_string(rank) + ": " + std::to_string(topo_.local_size) +
                                   " ranks on host " + options_.hostname + "; lightcc supports at most " +
                                   std::to_string(shm::kMaxLocalRanks) + " per host");
  }
  // One host: a direct area for callers' one-step allreduces (direct_allreduce.h), as large as
  // the one-step path's limit for this many ranks. Never sized by LIGHTCC_DIRECT, so ranks that
  // disagree on it still map each other's areas alike.
  const size_t direct_bytes =
      topo_.local_size == size && size > 1
          ? std::min<size_t>(static_cast<size_t>(config_.shm.chunk_bytes),
                             static_cast<size_t>(config_.shm.oneshot_bytes) * 2 / std::max(2, topo_.local_size))
          : 0;
  *layout = shm::RankAreaLayout::compute(topo_.local_size, static_cast<size_t>(config_.shm.ring_bytes),
                                         static_cast<size_t>(config_.shm.chunk_bytes), streams > 1 ? streams + 1 : 1,
                                         streams, direct_bytes);
  std::random_device rd;
  std::ostringstream segname;
  segname << "/lightcc-" << ::getpid() << "-r" << rank << "-g" << options_.generation << "-" << std::hex << rd();
  std::unique_ptr<shm::ShmSegment> own;
  LIGHTCC_RETURN_IF_ERROR(shm::ShmSegment::create(segname.str(), layout->total, &own));
  auto* header = static_cast<shm::RankHeader*>(own->base());
  header->magic = shm::kRankAreaMagic;
  header->pid = ::getpid();
  header->global_rank = rank;
  // Segment names stay within their host: each rank reads only its host peers' keys.
  std::vector<std::string> segnames(size, segname.str());
  if (size > 1) LIGHTCC_RETURN_IF_ERROR(store->set("shm/" + std::to_string(rank), segname.str()));
  for (int r : local) {
    if (r == rank) {
      segments->push_back(std::move(own));
      continue;
    }
    LIGHTCC_RETURN_IF_ERROR(store->get("shm/" + std::to_string(r), &segnames[r], timeout)
                                .withContext("waiting for rank " + std::to_string(r) + "'s shared-memory name"));
    std::unique_ptr<shm::ShmSegment> seg;
    LIGHTCC_RETURN_IF_ERROR(shm::ShmSegment::open(segnames[r], layout->total, &seg)
                                .withContext("mapping rank " + std::to_string(r) + "'s shared memory"));
    auto* h = static_cast<shm::RankHeader*>(seg->base());
    if (h->magic != shm::kRankAreaMagic || h->global_rank != r) {
      return Status::PeerFailure("shared memory of rank " + std::to_string(r) + " (" + segnames[r] +
                                 ") has a bad header");
    }
    segments->push_back(std::move(seg));
  }
  if (size > 1) LIGHTCC_RETURN_IF_ERROR(rendezvous::barrier(*store, "mapped", size, timeout));
  for (auto& s : *segments) s->unlink();  // only the owner's call removes a name
  return Status::OK();
}

// A channel's links: shared-memory rings of that channel to every host peer; fresh net comms (its
// own HARP flows) to the remote peers its algorithms need from the start (eagerPeers); a dialer
// for the other remote peers, linked the first time an algorithm asks (PeerDialer).
Status Mesh::connectChannel(Channel& ch, rendezvous::Store* store) {
  const int rank = topo_.rank, size = topo_.size;
  ch.world_links.assign(size, nullptr);
  std::vector<int> remote;
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    int li = ch.host->localIndexOf(r);
    if (li >= 0) {
      ch.owned_links.push_back(std::make_unique<shm::ShmLink>(ch.host.get(), li));
      ch.owned_links.back()->setPeerHost(options_.hostname);
      ch.world_links[r] = ch.owned_links.back().get();
    } else {
      remote.push_back(r);
    }
  }
  if (remote.empty()) return Status::OK();
  const std::string suffix = ch.index == 0 ? "" : std::to_string(ch.index);
  const std::string where = ch.index > 0 ? "links of stream " + std::to_string(ch.index) : "links";
  const std::vector<int> eager = eagerPeers(config_, topo_, ch.index, remote);
  if (!eager.empty()) {
    std::vector<std::unique_ptr<Link>> net_links;
    LIGHTCC_RETURN_IF_ERROR(
        connectNetPeers(config_, options_, rank, size, eager, *store, "net" + suffix, &net_plugin_, &net_links)
            .withContext(where));
    for (size_t i = 0; i < eager.size(); ++i) {
      net_links[i]->setPeerHost(hosts_[eager[i]]);
      ch.world_links[eager[i]] = net_links[i].get();
      ch.owned_links.push_back(std::move(net_links[i]));
    }
  }
  LIGHTCC_RETURN_IF_ERROR(makeDialer(config_, options_, size, remote, hosts_, *store, "dial" + suffix, &net_plugin_,
                                     &ch.world_links, &ch.dialer)
                              .withContext(where));
  // Network links cannot ring our doorbell: keep polling them while waiting. (A stream's idle
  // waits use a view of their own without this cap; see streams.cc.)
  ch.host->setMaxSleepUs(200);
  return Status::OK();
}

SetComm Mesh::makeSetComm(const Channel& ch, int32_t id, const std::vector<int>& ranks) const {
  SetComm c;
  c.id = id;
  c.ranks = ranks;
  c.host = ch.host.get();
  c.chunk_bytes = static_cast<size_t>(config_.shm.chunk_bytes);
  c.oneshot_bytes = static_cast<size_t>(config_.shm.oneshot_bytes);
  c.all_local = !config_.links.force_ring;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == topo_.rank) c.me = static_cast<int>(i);
    int li = ch.host->localIndexOf(ranks[i]);
    c.local_index.push_back(li);
    if (li < 0) c.all_local = false;
    c.links.push_back(ch.world_links[ranks[i]]);
  }
  c.dialer = ch.dialer.get();
  return c;
}

void Mesh::buildHierComm(Channel& ch, int32_t id, const std::vector<int>& ranks) const {
  // Where 2D can run (two_d_choice.h): forced, auto on 2+ hosts of equal 2+ ranks, or autotune,
  // which switches it live. The cost model then says from which size it is taken.
  const int g = twoDGroupSize(config_, topo_);
  const int n = static_cast<int>(ranks.size());
  auto me = std::find(ranks.begin(), ranks.end(), topo_.rank);
  if (me == ranks.end() || g <= 0 || n % g != 0 || n / g < 2) return;
  // Every group must sit on one host (its phases use shared memory); decided from every rank's
  // host id so all ranks agree.
  for (int start = 0; start < n; start += g) {
    for (int i = start; i < start + g; ++i) {
      if (hosts_[ranks[i]] != hosts_[ranks[start]]) {
        if (id == 0 && ch.index == 0 && config_.two_d == TwoDMode::kOn) {
          LIGHTCC_LOG(kWarning) << "LIGHT_2D_ALLREDUCE: ranks " << ranks[start] << ".." << ranks[start + g - 1]
                                << " are not on one host (LIGHT_INTRA_SIZE=" << g << "); using the flat ring";
        }
        return;
      }
    }
  }
  const int pos = static_cast<int>(me - ranks.begin());
  std::vector<int> intra(ranks.begin() + pos / g * g, ranks.begin() + pos / g * g + g);
  std::vector<int> cross;
  for (int start = 0; start < n; start += g) cross.push_back(ranks[start + pos % g]);
  HierComm h;
  // Counter slots apart from the process sets' own (see shm::kMaxProcessSets).
  h.intra = makeSetComm(ch, shm::kMaxProcessSets + id, intra);
  h.cross = makeSetComm(ch, 2 * shm::kMaxProcessSets + id, cross);
  if (!h.intra.all_local) return;
  ch.hier[id] = std::move(h);
}

void Mesh::buildLeaderComm(Channel& ch, int32_t id, const std::vector<int>& ranks) const {
  if (!config_.links.rd_leaders || config_.links.force_ring || config_.links.rd_allreduce_bytes == 0) return;
  if (std::find(ranks.begin(), ranks.end(), topo_.rank) == ranks.end()) return;
  const std::string& mine = hosts_[static_cast<size_t>(topo_.rank)];
  std::vector<int> intra, leaders;
  std::set<std::string> seen;
  for (int r : ranks) {  // ascending: a host's first member seen is its lowest
    const std::string& h = hosts_[static_cast<size_t>(r)];
    if (h == mine) intra.push_back(r);
    if (seen.insert(h).second) leaders.push_back(r);
  }
  // One host (shared memory does it all) or one member a host (flat recursive doubling is the same).
  if (leaders.size() < 2 || leaders.size() == ranks.size()) return;
  LeaderComm lc;
  // The 2D group's counter slot (see buildHierComm) is the one our host group would use: share
  // the 2D group when it is this host's members; a smaller one (LIGHT_INTRA_SIZE) keeps doubling flat.
  auto hier = ch.hier.find(id);
  lc.shares_hier = hier != ch.hier.end();
  if (lc.shares_hier && hier->second.intra.ranks != intra) return;
  if (!lc.shares_hier) lc.intra = makeSetComm(ch, shm::kMaxProcessSets + id, intra);
  lc.leaders = makeSetComm(ch, 2 * shm::kMaxProcessSets + id, leaders);
  ch.leaders[id] = std::move(lc);
}

int Mesh::countLinks(bool local) const {
  int n = 0;
  for (const auto& ch : channels_) {
    for (const auto& l : ch->owned_links) n += (l->kind() == "shm") == local ? 1 : 0;
  }
  return n;
}

void Mesh::addSet(int32_t id, const std::vector<int>& ranks) {
  for (auto& ch : channels_) {
    ch->comms[id] = makeSetComm(*ch, id, ranks);
    buildHierComm(*ch, id, ranks);
    buildLeaderComm(*ch, id, ranks);
  }
}

void Mesh::eraseSet(int32_t id) {
  for (auto& ch : channels_) {
    ch->comms.erase(id);
    ch->hier.erase(id);
    ch->leaders.erase(id);
  }
}

}  // namespace lightcc
