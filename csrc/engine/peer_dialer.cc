// PeerDialer: the dial loop (connect, accept, identify, answer), and the link that carries a failure.
#include "engine/peer_dialer.h"

#include <time.h>
#include <unistd.h>

#include "common/interrupt.h"
#include "transport/net/net_link.h"

namespace lightcc {
namespace {

double nowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// A peer that could not be reached: every call fails with why, so algorithms need no null checks.
class FailedLink : public Link {
 public:
  FailedLink(int peer, Status why) : peer_(peer), why_(std::move(why)) {}
  Status isend(const void*, size_t, LinkRequest**) override { return why_; }
  Status irecv(void*, size_t, LinkRequest**) override { return why_; }
  Status test(LinkRequest*, bool*, size_t*) override { return why_; }
  int peer() const override { return peer_; }
  std::string kind() const override { return "failed"; }

 private:
  int peer_;
  Status why_;
};

}  // namespace

PeerDialer::PeerDialer(net::NetPlugin& plugin, int rank, void* listen_comm, std::vector<std::string> handles,
                       std::vector<std::string> hosts, double timeout_s, std::vector<Link*>* world)
    : plugin_(plugin),
      rank_(rank),
      listen_comm_(listen_comm),
      handles_(std::move(handles)),
      hosts_(std::move(hosts)),
      timeout_s_(timeout_s),
      world_(world) {}

PeerDialer::~PeerDialer() {
  owned_.clear();  // links close their comms first
  for (auto& [peer, o] : out_) {
    if (o.send_comm != nullptr) plugin_.closeSend(o.send_comm);
  }
  for (Inbound& i : in_) plugin_.closeRecv(i.recv_comm);
  for (auto& [peer, comm] : accepted_) plugin_.closeRecv(comm);
  if (listen_comm_ != nullptr) plugin_.closeListen(listen_comm_);
}

std::string PeerDialer::who(int peer) const {
  const std::string host = peer >= 0 && static_cast<size_t>(peer) < hosts_.size() ? hosts_[peer] : "?";
  return "rank " + std::to_string(peer) + " (host " + host + ")";
}

Link* PeerDialer::link(int peer) {
  Link* l = (*world_)[static_cast<size_t>(peer)];
  if (l != nullptr) return l;
  auto f = failed_.find(peer);
  if (f != failed_.end()) return f->second.get();
  Status st = dial(peer);
  l = (*world_)[static_cast<size_t>(peer)];
  if (st.ok() && l != nullptr) return l;
  if (st.ok()) st = Status::Internal("dialing " + who(peer) + " ended without a link");
  auto made = std::make_unique<FailedLink>(peer, st);
  Link* failed = made.get();
  failed_[peer] = std::move(made);
  return failed;
}

// kConnecting -> kSendingRank -> kUp, as far as the plugin lets it go now.
Status PeerDialer::advance(int peer, Outbound& o) {
  const std::string ctx = "rank " + std::to_string(rank_) + " connecting to " + who(peer);
  if (o.stage == Stage::kConnecting) {
    if (int rc = plugin_.connect(&o.handle[0], &o.send_comm); rc != 0) return net::NetPlugin::toStatus(rc, ctx);
    if (o.send_comm != nullptr) o.stage = Stage::kSendingRank;
  }
  if (o.stage != Stage::kSendingRank) return Status::OK();
  if (o.req == nullptr) {
    if (int rc = plugin_.isend(o.send_comm, const_cast<int32_t*>(&rank_), sizeof(rank_), nullptr, &o.req); rc != 0) {
      return net::NetPlugin::toStatus(rc, ctx);
    }
    if (o.req == nullptr) return Status::OK();
  }
  int done = 0, size = 0;
  if (int rc = plugin_.test(o.req, &done, &size); rc != 0) return net::NetPlugin::toStatus(rc, ctx);
  if (done) o.stage = Stage::kUp;
  return Status::OK();
}

// Takes any new comm, reads each one's first message (its sender's rank) and files it.
Status PeerDialer::acceptAndIdentify() {
  void* recv_comm = nullptr;
  if (int rc = plugin_.accept(listen_comm_, &recv_comm); rc != 0) {
    return net::NetPlugin::toStatus(rc, "rank " + std::to_string(rank_) + " accepting on " + plugin_.info().device_name);
  }
  if (recv_comm != nullptr) in_.push_back({recv_comm});
  for (auto it = in_.begin(); it != in_.end();) {
    Inbound& i = *it;
    if (i.req == nullptr) {
      if (int rc = plugin_.irecv(i.recv_comm, &i.rank, sizeof(i.rank), nullptr, &i.req); rc != 0) {
        return net::NetPlugin::toStatus(rc, "first message of an accepted comm");
      }
    }
    int done = 0, size = 0;
    if (i.req != nullptr) {
      if (int rc = plugin_.test(i.req, &done, &size); rc != 0) {
        return net::NetPlugin::toStatus(rc, "first message of an accepted comm");
      }
    }
    if (!done) {
      ++it;
      continue;
    }
    const int from = i.rank;
    const bool known = size == sizeof(int32_t) && from >= 0 && static_cast<size_t>(from) < handles_.size() &&
                       from != rank_ && !handles_[static_cast<size_t>(from)].empty();
    if (!known || accepted_.count(from) != 0 || (*world_)[static_cast<size_t>(from)] != nullptr) {
      return Status::PeerFailure("rank " + std::to_string(rank_) + ": an accepted net comm announced rank " +
                                 std::to_string(from) + ", which is not a peer waiting to be linked");
    }
    accepted_[from] = i.recv_comm;
    it = in_.erase(it);
  }
  return Status::OK();
}

// Pairs every sent-and-up dial with its accepted comm into a link.
void PeerDialer::finishLinks() {
  for (auto it = out_.begin(); it != out_.end();) {
    auto acc = accepted_.find(it->first);
    if (it->second.stage != Stage::kUp || acc == accepted_.end()) {
      ++it;
      continue;
    }
    owned_.push_back(std::make_unique<net::NetLink>(&plugin_, it->first, it->second.send_comm, acc->second));
    owned_.back()->setPeerHost(hosts_[static_cast<size_t>(it->first)]);
    (*world_)[static_cast<size_t>(it->first)] = owned_.back().get();
    accepted_.erase(acc);
    it = out_.erase(it);
  }
}

std::vector<net::PeerTarget> PeerDialer::peerTargets() const {
  std::vector<net::PeerTarget> targets;
  for (size_t r = 0; r < handles_.size(); ++r) {
    const Link* l = (*world_)[r];
    if (l != nullptr && !l->peerAddress().empty()) {
      targets.push_back({static_cast<int>(r), hosts_[r], l->peerAddress()});
    } else if (!handles_[r].empty()) {  // not linked: its dialer still listens there
      const std::string address = net::handleAddress(handles_[r]);
      if (!address.empty()) targets.push_back({static_cast<int>(r), hosts_[r], address});
    }
  }
  return targets;
}

Status PeerDialer::dial(int peer) {
  if (peer < 0 || static_cast<size_t>(peer) >= handles_.size() || handles_[static_cast<size_t>(peer)].empty()) {
    return Status::InvalidArgument("rank " + std::to_string(rank_) + " has no net handle for " + who(peer));
  }
  if (out_.count(peer) == 0) out_[peer].handle = handles_[static_cast<size_t>(peer)];
  const double deadline = nowSeconds() + timeout_s_;
  // Until my link is up and every answer has reached its peer (that peer is dialing and waits).
  auto settled = [&] {
    if ((*world_)[static_cast<size_t>(peer)] == nullptr) return false;
    for (const auto& [to, o] : out_) {
      if (o.stage != Stage::kUp) return false;
    }
    return true;
  };
  while (!settled()) {
    LIGHTCC_RETURN_IF_ERROR(acceptAndIdentify());
    // Answer whoever dialed us: they may be waiting for this link while we wait for another.
    for (const auto& [from, comm] : accepted_) {
      if (out_.count(from) == 0) out_[from].handle = handles_[static_cast<size_t>(from)];
    }
    for (auto& [to, o] : out_) LIGHTCC_RETURN_IF_ERROR(advance(to, o));
    finishLinks();
    if (settled()) break;
    if (interruptRequested()) return Status::Cancelled("interrupted while connecting to " + who(peer));
    if (nowSeconds() > deadline) {
      if ((*world_)[static_cast<size_t>(peer)] != nullptr) break;  // mine is up; the answers go on later
      const Outbound& o = out_[peer];
      return Status::Timeout("rank " + std::to_string(rank_) + " could not link to " + who(peer) + " within " +
                             std::to_string(static_cast<int>(timeout_s_)) + " s (LIGHTCC_TIMEOUT): " +
                             (o.stage != Stage::kUp ? "its listener did not take our connection"
                                                    : "it never connected back"));
    }
    usleep(20);  // setup path: leave the core to the plugin's threads and the peer
  }
  return Status::OK();
}

}  // namespace lightcc
