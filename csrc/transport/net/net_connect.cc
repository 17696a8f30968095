// connectNetLinks: one listen, a handle allgather, then non-blocking connect/accept to all peers.
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include "common/interrupt.h"
#include "transport/net/net_link.h"

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

}  // namespace

Status connectNetLinks(
    NetPlugin& plugin, int my_rank, const std::vector<int>& remote_peers,
    const std::function<Status(const std::string&, std::vector<std::string>*)>& allgather_handles,
    double timeout_s, std::vector<std::unique_ptr<Link>>* links_out) {
  links_out->clear();
  std::vector<Outbound> out;
  std::vector<Inbound> in;
  Cleanup cleanup{plugin, nullptr, &out, &in};
  std::string my_handle(NetPlugin::kHandleBytes, '\0');
  int rc = plugin.listen(&my_handle[0], &cleanup.listen_comm);
  if (rc != 0) return NetPlugin::toStatus(rc, "listen on " + plugin.deviceName());
  std::vector<std::string> handles;
  LIGHTCC_RETURN_IF_ERROR(allgather_handles(my_handle, &handles).withContext("net handle allgather"));
  for (int peer : remote_peers) {
    if (peer < 0 || peer >= static_cast<int>(handles.size()) || peer == my_rank ||
        handles[static_cast<size_t>(peer)].size() != NetPlugin::kHandleBytes) {
      return Status::InvalidArgument("no valid net handle for rank " + std::to_string(peer));
    }
    out.push_back({peer, handles[static_cast<size_t>(peer)]});
  }
  int32_t rank_msg = my_rank;
  std::vector<int32_t> rank_bufs(remote_peers.size() + 1, -1);
  std::map<int, void*> recv_by_rank;
  size_t up = 0;
  double deadline = nowSeconds() + timeout_s;
  while (up < out.size() || recv_by_rank.size() < out.size()) {
    for (Outbound& o : out) {
      std::string ctx = "connect to rank " + std::to_string(o.peer);
      if (o.stage == OutStage::kConnecting) {
        rc = plugin.connect(&o.handle[0], &o.send_comm);
        if (rc != 0) return NetPlugin::toStatus(rc, ctx);
        if (o.send_comm != nullptr) o.stage = OutStage::kSendingRank;
      }
      if (o.stage == OutStage::kSendingRank) {
        if (o.req == nullptr) {
          rc = plugin.isend(o.send_comm, &rank_msg, sizeof(rank_msg), nullptr, &o.req);
          if (rc != 0) return NetPlugin::toStatus(rc, ctx);
        }
        if (o.req != nullptr) {
          int done = 0, size = 0;
          rc = plugin.test(o.req, &done, &size);
          if (rc != 0) return NetPlugin::toStatus(rc, ctx);
          if (done) {
            o.stage = OutStage::kUp;
            ++up;
          }
        }
      }
    }
    if (in.size() < out.size()) {
      void* recv_comm = nullptr;
      rc = plugin.accept(cleanup.listen_comm, &recv_comm);
      if (rc != 0) return NetPlugin::toStatus(rc, "accept on " + plugin.deviceName());
      if (recv_comm != nullptr) in.push_back({recv_comm});
    }
    for (size_t k = 0; k < in.size(); ++k) {
      Inbound& i = in[k];
      if (i.stage != InStage::kReadingRank) continue;
      if (i.req == nullptr) {
        rc = plugin.irecv(i.recv_comm, &rank_bufs[k], sizeof(int32_t), nullptr, &i.req);
        if (rc != 0) return NetPlugin::toStatus(rc, "first message of an accepted comm");
        if (i.req == nullptr) continue;
      }
      int done = 0, size = 0;
      rc = plugin.test(i.req, &done, &size);
      if (rc != 0) return NetPlugin::toStatus(rc, "first message of an accepted comm");
      if (!done) continue;
      i.rank = rank_bufs[k];
      i.stage = InStage::kIdentified;
      bool expected = false;
      for (int p : remote_peers) expected |= p == i.rank;
      if (size != sizeof(int32_t) || !expected || recv_by_rank.count(i.rank) != 0) {
        return Status::PeerFailure("an accepted net comm announced rank " + std::to_string(i.rank) +
                                   " (" + std::to_string(size) + " bytes), which is not an "
                                   "expected, not-yet-connected peer");
      }
      recv_by_rank[i.rank] = i.recv_comm;
    }
    usleep(50);  // setup path: yield the core to the plugin's threads and the peers
    if (interruptRequested()) {
      return Status::Cancelled("interrupted while connecting net links on " + plugin.deviceName());
    }
    if (nowSeconds() > deadline) {
      std::string missing;
      for (Outbound& o : out) {
        bool ok = o.stage == OutStage::kUp && recv_by_rank.count(o.peer) != 0;
        if (!ok) missing += (missing.empty() ? "" : ", ") + std::to_string(o.peer);
      }
      return Status::Timeout("net links to ranks [" + missing + "] not up after " +
                             std::to_string(timeout_s) + " s");
    }
  }
  for (Outbound& o : out) {
    links_out->push_back(std::make_unique<NetLink>(&plugin, o.peer, o.send_comm, recv_by_rank[o.peer]));
    o.send_comm = nullptr;
    for (Inbound& i : in) if (i.rank == o.peer) i.recv_comm = nullptr;
  }
  return Status::OK();
}

}  // namespace net
}  // namespace lightcc
