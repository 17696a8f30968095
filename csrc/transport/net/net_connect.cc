// connectNetLinks: one listen, a handle allgather, then non-blocking connect/accept to all peers.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "common/interrupt.h"
#include "transport/net/net_link.h"
#include "transport/net/peer_probe.h"

namespace lightcc {
namespace net {
namespace {

double nowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// Connect stages per remote peer: kConnecting -(send comm)-> kSendingRank -(rank sent)-> kUp
enum class OutStage { kConnecting, kSendingRank, kUp };
// Accept stages per accepted comm: kReadingRank -(4 bytes)-> kIdentified
enum class InStage { kReadingRank, kIdentified };

struct Outbound {
  int peer;
  std::string handle;  // mutable copy: the plugin keeps connect progress in it
  OutStage stage = OutStage::kConnecting;
  void* send_comm = nullptr;
  void* req = nullptr;
};

struct Inbound {
  void* recv_comm;
  InStage stage = InStage::kReadingRank;
  int32_t rank = -1;
  void* req = nullptr;
};

struct Cleanup {
  NetPlugin& plugin;
  void* listen_comm = nullptr;
  std::vector<Outbound>* out = nullptr;
  std::vector<Inbound>* in = nullptr;
  bool armed = true;
  ~Cleanup() {
    if (!armed) return;
    for (Outbound& o : *out) if (o.send_comm != nullptr) plugin.closeSend(o.send_comm);
    for (Inbound& i : *in) if (i.recv_comm != nullptr) plugin.closeRecv(i.recv_comm);
    if (listen_comm != nullptr) plugin.closeListen(listen_comm);
  }
};

// One connectNetLinks call's progress: each step is non-blocking and safe to call again.
class Connector {
 public:
  Connector(NetPlugin& plugin, int my_rank, const std::vector<int>& remote_peers)
      : plugin_(plugin), rank_msg_(my_rank), peers_(remote_peers), rank_bufs_(remote_peers.size() + 1, -1) {}

  std::vector<Outbound> out;
  std::vector<Inbound> in;
  std::map<int, void*> recv_by_rank;
  size_t up = 0;

  bool done() const { return up == out.size() && recv_by_rank.size() == out.size(); }

  // kConnecting -> kSendingRank -> kUp, as far as the plugin lets it go now.
  Status advance(Outbound& o) {
    const std::string ctx = "connect to rank " + std::to_string(o.peer);
    if (o.stage == OutStage::kConnecting) {
      if (int rc = plugin_.connect(&o.handle[0], &o.send_comm); rc != 0) return NetPlugin::toStatus(rc, ctx);
      if (o.send_comm != nullptr) o.stage = OutStage::kSendingRank;
    }
    if (o.stage != OutStage::kSendingRank) return Status::OK();
    if (o.req == nullptr) {
      if (int rc = plugin_.isend(o.send_comm, &rank_msg_, sizeof(rank_msg_), nullptr, &o.req); rc != 0) {
        return NetPlugin::toStatus(rc, ctx);
      }
      if (o.req == nullptr) return Status::OK();
    }
    int finished = 0, size = 0;
    if (int rc = plugin_.test(o.req, &finished, &size); rc != 0) return NetPlugin::toStatus(rc, ctx);
    if (finished) {
      o.stage = OutStage::kUp;
      ++up;
    }
    return Status::OK();
  }

  // Takes one more incoming comm if the plugin has one.
  Status acceptOne(void* listen_comm) {
    if (in.size() >= out.size()) return Status::OK();
    void* recv_comm = nullptr;
    if (int rc = plugin_.accept(listen_comm, &recv_comm); rc != 0) {
      return NetPlugin::toStatus(rc, "accept on " + plugin_.info().device_name);
    }
    if (recv_comm != nullptr) in.push_back({recv_comm});
    return Status::OK();
  }

  // Reads accepted comm k's first message, its sender's rank: kReadingRank -> kIdentified.
  Status identify(size_t k) {
    Inbound& i = in[k];
    if (i.stage != InStage::kReadingRank) return Status::OK();
    const char* ctx = "first message of an accepted comm";
    if (i.req == nullptr) {
      if (int rc = plugin_.irecv(i.recv_comm, &rank_bufs_[k], sizeof(int32_t), nullptr, &i.req); rc != 0) {
        return NetPlugin::toStatus(rc, ctx);
      }
      if (i.req == nullptr) return Status::OK();
    }
    int finished = 0, size = 0;
    if (int rc = plugin_.test(i.req, &finished, &size); rc != 0) return NetPlugin::toStatus(rc, ctx);
    if (!finished) return Status::OK();
    i.rank = rank_bufs_[k];
    i.stage = InStage::kIdentified;
    const bool expected = std::find(peers_.begin(), peers_.end(), i.rank) != peers_.end();
    if (size != sizeof(int32_t) || !expected || recv_by_rank.count(i.rank) != 0) {
      return Status::PeerFailure("an accepted net comm announced rank " + std::to_string(i.rank) + " (" +
                                 std::to_string(size) + " bytes), which is not an expected, not-yet-connected peer");
    }
    recv_by_rank[i.rank] = i.recv_comm;
    return Status::OK();
  }

  // The peers whose link is not up both ways, "1 (10.0.0.2:4000), 3 (10.0.0.3:4000)".
  std::string missing() const {
    std::string text;
    for (const Outbound& o : out) {
      if (o.stage == OutStage::kUp && recv_by_rank.count(o.peer) != 0) continue;
      const std::string addr = handleAddress(o.handle);
      text += (text.empty() ? "" : ", ") + std::to_string(o.peer) + (addr.empty() ? "" : " (" + addr + ")");
    }
    return text;
  }

 private:
  NetPlugin& plugin_;
  int32_t rank_msg_;
  const std::vector<int>& peers_;
  std::vector<int32_t> rank_bufs_;
};

Status checkHandles(const std::vector<std::string>& handles, int my_rank, const std::vector<int>& remote_peers) {
  for (int peer : remote_peers) {
    if (peer < 0 || peer >= static_cast<int>(handles.size()) || peer == my_rank ||
        handles[static_cast<size_t>(peer)].size() != NetPlugin::kHandleBytes) {
      return Status::InvalidArgument("no valid net handle for rank " + std::to_string(peer));
    }
  }
  return Status::OK();
}

}  // namespace

Status connectNetLinks(
    NetPlugin& plugin, int my_rank, const std::vector<int>& remote_peers,
    const std::function<Status(const std::string&, std::vector<std::string>*)>& allgather_handles,
    double timeout_s, std::vector<std::unique_ptr<Link>>* links_out) {
  links_out->clear();
  Connector c(plugin, my_rank, remote_peers);
  Cleanup cleanup{plugin, nullptr, &c.out, &c.in};
  std::string my_handle(NetPlugin::kHandleBytes, '\0');
  if (int rc = plugin.listen(&my_handle[0], &cleanup.listen_comm); rc != 0) {
    return NetPlugin::toStatus(rc, "listen on " + plugin.info().device_name);
  }
  std::vector<std::string> handles;
  LIGHTCC_RETURN_IF_ERROR(allgather_handles(my_handle, &handles).withContext("net handle allgather"));
  LIGHTCC_RETURN_IF_ERROR(checkHandles(handles, my_rank, remote_peers));
  std::vector<std::string> addresses;
  for (int peer : remote_peers) {
    c.out.push_back({peer, handles[static_cast<size_t>(peer)]});
    addresses.push_back(handleAddress(handles[static_cast<size_t>(peer)]));
  }
  const double deadline = nowSeconds() + timeout_s;
  while (!c.done()) {
    for (Outbound& o : c.out) LIGHTCC_RETURN_IF_ERROR(c.advance(o));
    LIGHTCC_RETURN_IF_ERROR(c.acceptOne(cleanup.listen_comm));
    for (size_t k = 0; k < c.in.size(); ++k) LIGHTCC_RETURN_IF_ERROR(c.identify(k));
    usleep(50);  // setup path: yield the core to the plugin's threads and the peers
    if (interruptRequested()) {
      return Status::Cancelled("interrupted while connecting net links on " + plugin.info().device_name);
    }
    if (nowSeconds() > deadline) {
      return Status::Timeout("net links to ranks [" + c.missing() + "] not up after " + std::to_string(timeout_s) +
                             " s");
    }
  }
  auto listener = std::make_shared<NetListener>(&plugin, cleanup.listen_comm);
  cleanup.listen_comm = nullptr;
  for (size_t k = 0; k < c.out.size(); ++k) {
    Outbound& o = c.out[k];
    links_out->push_back(
        std::make_unique<NetLink>(&plugin, o.peer, o.send_comm, c.recv_by_rank[o.peer], addresses[k], listener));
    o.send_comm = nullptr;
    for (Inbound& i : c.in) if (i.rank == o.peer) i.recv_comm = nullptr;
  }
  return Status::OK();
}

}  // namespace net
}  // namespace lightcc
