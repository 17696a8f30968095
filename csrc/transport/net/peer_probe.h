// Peer probe: after a peer-caused failure, which remote ranks still answer at their listen address.
//
// DESIGN. When a ring stalls, every survivor ends up waiting on some neighbour, and most of those
// neighbours are alive and merely stuck behind the lost one; a timeout alone cannot tell them
// apart. Every rank keeps its net listen socket open while its links live (NetListener), so the
// kernel of a live rank completes a TCP handshake on it, that of a dead rank's host answers
// with a reset, and a host that is cut off answers nothing. A survivor that fails because of a
// peer probes every remote rank it has a link to — one non-blocking connect each, all at once,
// for a bounded time — and names the hosts that no longer answer. With links made on demand a
// rank may hold no link to the lost host, so the engine also passes the listen addresses of the
// remote ranks it has not linked yet (the peer dialer's handles). Runs on the thread that owns
// the links, once per failure, after the data path has given up; nothing here touches the links.
#pragma once

#include <string>
#include <vector>

#include "transport/link.h"

namespace lightcc {
namespace net {

// "10.0.0.4:40123" (or "[fe80::1]:40123") from a HARP listen handle; "" for other plugins' handles.
std::string handleAddress(const std::string& handle);

// What a listen address said to one TCP connect.
enum class PeerAnswer {
  kAnswers,  // the handshake completed: the rank lives (it may be stuck behind another)
  kRefuses,  // reset: the host is up but nothing listens there any more (the rank is gone)
  kSilent,   // no reply within the budget, or no route: the host is cut off or down
  kUnknown,  // no address to probe (a plugin whose handle we cannot read)
};
const char* peerAnswerName(PeerAnswer a);

// Connects to every address at once; gives up on the silent ones after `budget_s`.
std::vector<PeerAnswer> probeAddresses(const std::vector<std::string>& addresses, double budget_s);

// A remote rank to probe: its listen address and host id.
struct PeerTarget {
  int rank = -1;
  std::string host;
  std::string address;
};

// The targets of `links` (null and address-less links skipped).
std::vector<PeerTarget> linkTargets(const std::vector<Link*>& links);

// One sentence for an error message naming, host by host, the targets that no longer answer,
// e.g. "peer check: host node3 (10.0.0.4; ranks 12, 13) does not answer (cut off or down)"; or
// that every remote rank answers.
std::string diagnosePeers(const std::vector<PeerTarget>& targets, double budget_s);

// `st` with diagnosePeers() appended when a peer caused it (PeerFailure, Timeout) and no peer
// check is in it yet; the probe gets `budget_s` (peerCheckSeconds(): LIGHTCC_PEER_CHECK_S), none at 0.
Status withPeerCheck(const Status& st, const std::vector<PeerTarget>& targets, double budget_s);

}  // namespace net
}  // namespace lightcc
