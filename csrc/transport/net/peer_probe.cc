// Peer probe: decode a listen address from a HARP handle, connect to many at once, sum up per host.
#include "transport/net/peer_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

namespace lightcc {
namespace net {
namespace {

// HARP's listen handle (harp_plugin/src/connection.h, WireHandle): magic, version, reserved,
// listen id, then the listener's sockaddr. Read here only to name peers in errors.
constexpr uint32_t kHarpHandleMagic = 0x4c444848;  // "HHDL"
constexpr size_t kHarpAddrOffset = 16;

bool parseAddress(const std::string& text, sockaddr_storage* out, socklen_t* len) {
  std::memset(out, 0, sizeof(*out));
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = text.substr(0, colon);
  const int port = std::atoi(text.c_str() + colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    auto* a = reinterpret_cast<sockaddr_in6*>(out);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    *len = sizeof(*a);
    return inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a->sin6_addr) == 1;
  }
  auto* a = reinterpret_cast<sockaddr_in*>(out);
  a->sin_family = AF_INET;
  a->sin_port = htons(static_cast<uint16_t>(port));
  *len = sizeof(*a);
  return inet_pton(AF_INET, host.c_str(), &a->sin_addr) == 1;
}

// Closes its descriptors however the probe ends.
struct Sockets {
  std::vector<int> fds;
  ~Sockets() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
};

PeerAnswer answerOf(int err) {
  if (err == 0) return PeerAnswer::kAnswers;
  if (err == ECONNREFUSED) return PeerAnswer::kRefuses;
  return PeerAnswer::kSilent;  // EHOSTUNREACH, ENETUNREACH, ETIMEDOUT, ...
}

// The IP part of "10.0.0.4:40123".
std::string hostPart(const std::string& address) { return address.substr(0, address.rfind(':')); }

}  // namespace

std::string handleAddress(const std::string& handle) {
  uint32_t magic = 0;
  if (handle.size() < kHarpAddrOffset + sizeof(sockaddr_in6)) return "";
  std::memcpy(&magic, handle.data(), sizeof(magic));
  if (magic != kHarpHandleMagic) return "";
  sockaddr_storage ss;
  std::memset(&ss, 0, sizeof(ss));
  std::memcpy(&ss, handle.data() + kHarpAddrOffset, sizeof(sockaddr_in6));
  char host[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    if (inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host)) == nullptr) return "";
    return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host)) == nullptr) return "";
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  return "";
}

const char* peerAnswerName(PeerAnswer a) {
  switch (a) {
    case PeerAnswer::kAnswers: return "answers";
    case PeerAnswer::kRefuses: return "refuses connections (the process is gone)";
    case PeerAnswer::kSilent: return "does not answer (cut off or down)";
    case PeerAnswer::kUnknown: return "has no address to probe";
  }
  return "?";
}

std::vector<PeerAnswer> probeAddresses(const std::vector<std::string>& addresses, double budget_s) {
  using Clock = std::chrono::steady_clock;
  std::vector<PeerAnswer> result(addresses.size(), PeerAnswer::kUnknown);
  Sockets socks;
  socks.fds.assign(addresses.size(), -1);
  std::vector<pollfd> pending;
  std::vector<size_t> index;
  for (size_t i = 0; i < addresses.size(); ++i) {
    sockaddr_storage ss;
    socklen_t len = 0;
    if (!parseAddress(addresses[i], &ss, &len)) continue;
    const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    socks.fds[i] = fd;
    if (connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0) {
      result[i] = PeerAnswer::kAnswers;
    } else if (errno == EINPROGRESS) {
      result[i] = PeerAnswer::kSilent;  // until it says otherwise
      pending.push_back({fd, POLLOUT, 0});
      index.push_back(i);
    } else {
      result[i] = answerOf(errno);
    }
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(budget_s);
  size_t open = pending.size();
  while (open > 0) {
    const double left_ms = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    if (left_ms <= 0) break;
    if (poll(pending.data(), pending.size(), static_cast<int>(left_ms) + 1) < 0 && errno != EINTR) break;
    for (size_t k = 0; k < pending.size(); ++k) {
      if (pending[k].fd < 0 || pending[k].revents == 0) continue;
      int err = 0;
      socklen_t elen = sizeof(err);
      getsockopt(pending[k].fd, SOL_SOCKET, SO_ERROR, &err, &elen);
      result[index[k]] = answerOf(err);
      pending[k].fd = -1;  // poll ignores negative descriptors
      --open;
    }
  }
  return result;
}

std::vector<PeerTarget> linkTargets(const std::vector<Link*>& links) {
  std::vector<PeerTarget> targets;
  for (Link* l : links) {
    if (l == nullptr || l->peerAddress().empty()) continue;
    targets.push_back({l->peer(), l->peerHost(), l->peerAddress()});
  }
  return targets;
}

std::string diagnosePeers(const std::vector<PeerTarget>& targets, double budget_s) {
  if (targets.empty()) return "";
  std::vector<std::string> addresses;
  for (const PeerTarget& t : targets) addresses.push_back(t.address);
  const std::vector<PeerAnswer> answers = probeAddresses(addresses, budget_s);
  // Per host and answer, the ranks: a host whose ranks all went the same way is named once.
  struct HostSeen {
    std::string ip;
    std::map<PeerAnswer, std::vector<int>> ranks;
  };
  std::map<std::string, HostSeen> hosts;
  for (size_t i = 0; i < targets.size(); ++i) {
    const std::string id = targets[i].host.empty() ? addresses[i] : targets[i].host;
    HostSeen& h = hosts[id];
    h.ip = hostPart(addresses[i]);
    h.ranks[answers[i]].push_back(targets[i].rank);
  }
  // Whole hosts first (the likely cause), hosts where only some ranks are gone after; the text
  // may be cut to fit a failure record, so the cause must come early.
  std::string text;
  for (int pass = 0; pass < 2; ++pass) {
   for (const auto& [id, h] : hosts) {
    if ((h.ranks.size() == 1) != (pass == 0)) continue;
    for (const auto& [answer, ranks] : h.ranks) {
      if (answer == PeerAnswer::kAnswers) continue;
      std::string list;
      for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
      const bool whole = h.ranks.size() == 1;
      text += std::string(text.empty() ? "" : "; ") + "host " + id + " (" + h.ip + "; " +
              (ranks.size() == 1 ? "rank " : "ranks ") + list + ")" + (whole ? "" : " partly") + " " +
              peerAnswerName(answer);
    }
   }
  }
  const std::string budget = std::to_string(static_cast<int>(budget_s * 1000)) + " ms";
  if (text.empty()) return "peer check: every remote rank answers at its listen address";
  return "peer check (TCP connect to each remote rank, " + budget + "): " + text;
}

Status withPeerCheck(const Status& st, const std::vector<PeerTarget>& targets, double budget_s) {
  if (budget_s <= 0) return st;
  const StatusCode code = st.code();
  if (code != StatusCode::kPeerFailure && code != StatusCode::kTimeout && code != StatusCode::kSystemError) return st;
  if (st.message().find("peer check") != std::string::npos) return st;
  const std::string seen = diagnosePeers(targets, budget_s);
  return seen.empty() ? st : Status(st.code(), st.message() + "; " + seen);
}

}  // namespace net
}  // namespace lightcc
