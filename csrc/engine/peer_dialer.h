// PeerDialer: links to ranks on other hosts made on first use, for the peers init did not connect.
//
// DESIGN. One per channel, owned by the Channel and used only by that channel's thread (channel
// 0: whoever drives the engine; c >= 1: stream worker c), like the links it makes. At init the
// Mesh connects only the peers the configured algorithms need (ring neighbours, the 2D cross
// ring, the negotiation tree); every rank also listens once more for the rest and publishes that
// handle. A link is a send comm this rank connects plus a receive comm the peer connects, whose
// first message is the peer's rank (as at init). link(peer) connects to the peer and keeps
// accepting until the peer's comm has arrived. Deadlock-free when two ranks dial each other at
// once, or A dials B while B dials C: every accepted comm from a rank with no link yet is
// answered by dialing that rank back in the same loop, so no rank waits on one that is dialing
// elsewhere. Connection stages per peer: kConnecting -(send comm)-> kSendingRank -(sent)-> kUp;
// a link exists once kUp and that peer's comm was accepted and identified.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/set_comm.h"
#include "common/status.h"
#include "transport/link.h"
#include "transport/net/net_plugin.h"

namespace lightcc {

class PeerDialer : public LinkSource {
 public:
  // `listen_comm` is this rank's (owned from now on), `handles[r]` rank r's published listen
  // handle (empty where r is never dialed: this rank, its host), `hosts[r]` its host id for
  // errors. Made links are stored in *world (by global rank) and owned here.
  PeerDialer(net::NetPlugin& plugin, int rank, void* listen_comm, std::vector<std::string> handles,
             std::vector<std::string> hosts, double timeout_s, std::vector<Link*>* world);
  ~PeerDialer() override;
  PeerDialer(const PeerDialer&) = delete;
  PeerDialer& operator=(const PeerDialer&) = delete;

  // The link to `peer`, connecting it now if needed. Never null: when the peer cannot be reached
  // within LIGHTCC_TIMEOUT the link returned fails every call with an error naming the peer.
  Link* link(int peer) override;
  std::vector<net::PeerTarget> peerTargets() const override;
  int made() const { return static_cast<int>(owned_.size()); }

 private:
  enum class Stage { kConnecting, kSendingRank, kUp };
  struct Outbound {
    std::string handle;  // mutable copy: the plugin keeps connect progress in it
    Stage stage = Stage::kConnecting;
    void* send_comm = nullptr;
    void* req = nullptr;
  };
  struct Inbound {  // an accepted comm whose sender is not known yet
    void* recv_comm;
    void* req = nullptr;
    int32_t rank = -1;
  };

  Status dial(int peer);
  Status advance(int peer, Outbound& o);
  Status acceptAndIdentify();
  void finishLinks();
  std::string who(int peer) const;

  net::NetPlugin& plugin_;
  const int32_t rank_;
  void* listen_comm_;
  const std::vector<std::string> handles_;
  const std::vector<std::string> hosts_;
  const double timeout_s_;
  std::vector<Link*>* world_;
  std::map<int, Outbound> out_;       // dials in progress
  std::list<Inbound> in_;             // accepted, not yet identified (stable: reads land in them)
  std::map<int, void*> accepted_;     // identified receive comms waiting for their send side
  std::vector<std::unique_ptr<Link>> owned_;
  std::map<int, std::unique_ptr<Link>> failed_;  // peers that could not be reached, and why
};

}  // namespace lightcc
