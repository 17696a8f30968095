// Connect side: opens a comm's flows to a listener and runs the client half of the handshake.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "comm_setup.h"
#include "connection.h"
#include "log.h"
#include "runtime.h"
#include "wire.h"

namespace harp {
namespace {

constexpr uint32_t kConnectorMagic = 0x4e4e4348;  // "HCNN"

// Per-flow client stages, moved only by progressOut:
//   kConnecting -(TCP up)-> kReadHello -(ServerHello ok)-> kWriteHello -(sent)-> kReadVerdict
//   -(accepted + server MAC ok)-> kReady
enum class OutStage { kConnecting, kReadHello, kWriteHello, kReadVerdict, kReady };

struct OutFlow {
  int fd = -1;
  OutStage stage = OutStage::kConnecting;
  uint8_t shello[kServerHelloBytes] = {};
  uint8_t chello[kClientHelloBytes] = {};
  uint8_t verdict[kVerdictBytes] = {};
  size_t io = 0;  // bytes done of the current frame
};

struct Connector {
  uint32_t magic = kConnectorMagic;
  SockAddr addr{};
  std::string peer;
  uint64_t listen_id = 0;
  uint64_t comm_id = 0;
  uint64_t chunk_bytes = 0;
  double deadline = 0;
  std::vector<OutFlow> flows;
  ~Connector() {
    for (OutFlow& f : flows) {
      if (f.fd >= 0) close(f.fd);
    }
    magic = kDeadMagic;
  }
};

// Each stage's step returns the failure reason, or "" having either moved f to the next stage
// (progressOut runs that one at once) or left it where it was (its socket is not ready).
void enter(OutFlow& f, OutStage next) {
  f.stage = next;
  f.io = 0;
}

std::string stepConnecting(OutFlow& f) {
  pollfd p{f.fd, POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0) return "";
  int soerr = 0;
  socklen_t len = sizeof(soerr);
  getsockopt(f.fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
  if (soerr != 0) return std::string("connect: ") + strerror(soerr);
  enter(f, OutStage::kReadHello);
  return "";
}

// The listener's hello read and checked: our hello (with its MAC when authenticated) is ready.
std::string stepReadHello(Connector& c, OutFlow& f, int index, const Params& params) {
  int err = 0;
  IoStep s = harpReadSome(f.fd, f.shello, kServerHelloBytes, &f.io, &err);
  if (s == IoStep::kAgain) return "";
  if (s == IoStep::kClosed) return "the listener closed the flow before its hello";
  if (s == IoStep::kError) return std::string("recv(server hello): ") + strerror(err);
  ServerHello sh;
  Refusal r = harpDecodeServerHello(f.shello, kServerHelloBytes, &sh);
  if (r != Refusal::kNone) return std::string("server hello: ") + harpRefusalName(r);
  if (sh.listen_id != c.listen_id) return "the address is served by another listener (listen id mismatch)";
  bool server_auth = (sh.flags & kFlagAuth) != 0;
  if (server_auth != !params.secret.empty()) {
    return server_auth ? "the listener requires a job secret but HARP_JOB_SECRET is unset"
                       : "the listener runs without a job secret; refusing an unauthenticated peer";
  }
  ClientHello ch;
  ch.flags = params.secret.empty() ? 0 : kFlagAuth;
  ch.comm_id = c.comm_id;
  ch.flow_idx = static_cast<uint16_t>(index);
  ch.nflows = static_cast<uint16_t>(c.flows.size());
  ch.chunk_bytes = c.chunk_bytes;
  if (!harpRandomBytes(ch.nonce, kNonceBytes)) return "getrandom failed";
  harpEncodeClientHello(ch, f.shello, params.secret, f.chello);
  enter(f, OutStage::kWriteHello);
  return "";
}

std::string stepWriteHello(OutFlow& f) {
  int err = 0;
  IoStep s = harpWriteSome(f.fd, f.chello, kClientHelloBytes, &f.io, &err);
  if (s == IoStep::kAgain) return "";
  if (s != IoStep::kDone) return std::string("send(client hello): ") + strerror(err);
  enter(f, OutStage::kReadVerdict);
  return "";
}

std::string stepReadVerdict(OutFlow& f, const Params& params) {
  int err = 0;
  IoStep s = harpReadSome(f.fd, f.verdict, kVerdictBytes, &f.io, &err);
  if (s == IoStep::kAgain) return "";
  if (s == IoStep::kClosed) return "the listener closed the flow without a verdict";
  if (s == IoStep::kError) return std::string("recv(verdict): ") + strerror(err);
  Verdict v;
  Refusal r = harpDecodeVerdict(f.verdict, kVerdictBytes, &v);
  if (r != Refusal::kNone) return std::string("verdict: ") + harpRefusalName(r);
  if (!v.accepted) return std::string("refused by the listener: ") + harpRefusalName(v.reason);
  if (!params.secret.empty() && !harpVerifyVerdictMac(f.chello, f.verdict, params.secret)) {
    return "the listener failed to prove the job secret (verdict HMAC mismatch)";
  }
  f.stage = OutStage::kReady;
  return "";
}

// Returns "" while progressing or done (f.stage == kReady), else the failure reason.
std::string progressOut(Connector& c, OutFlow& f, int index, const Params& params) {
  for (;;) {
    const OutStage before = f.stage;
    std::string why;
    switch (f.stage) {
      case OutStage::kConnecting: why = stepConnecting(f); break;
      case OutStage::kReadHello: why = stepReadHello(c, f, index, params); break;
      case OutStage::kWriteHello: why = stepWriteHello(f); break;
      case OutStage::kReadVerdict: why = stepReadVerdict(f, params); break;
      case OutStage::kReady: return "";
    }
    if (!why.empty() || f.stage == before) return why;
  }
}

void unregister(Runtime* rt, Connector* c) {
  std::lock_guard<std::mutex> lock(rt->registry_mu);
  rt->connectors.erase(c);
}

ncclResult_t startConnect(Runtime* rt, WireHandle* h, std::unique_ptr<Connector>* out) {
  auto c = std::make_unique<Connector>();
  memcpy(&c->addr, h->addr, sizeof(h->addr));
  if (c->addr.sa.sa_family != AF_INET && c->addr.sa.sa_family != AF_INET6) {
    HARP_WARN("connect: handle holds address family %d, expected IPv4/IPv6", c->addr.sa.sa_family);
    return harp_abi::ncclInvalidArgument;
  }
  c->peer = harpAddrToString(c->addr);
  c->listen_id = h->listen_id;
  c->chunk_bytes = rt->params.transfer.chunk_bytes;
  c->deadline = harpNowSeconds() + rt->params.handshake_timeout_s;
  if (!harpRandomBytes(&c->comm_id, sizeof(c->comm_id))) return harp_abi::ncclSystemError;
  c->flows.resize(static_cast<size_t>(rt->params.nflows));
  for (OutFlow& f : c->flows) {
    std::string err;
    f.fd = harpTcpSocket(c->addr.sa.sa_family, &err);
    if (f.fd < 0) {
      HARP_WARN("connect to %s: %s", c->peer.c_str(), err.c_str());
      return harp_abi::ncclSystemError;
    }
    if (connect(f.fd, &c->addr.sa, harpAddrLen(c->addr)) != 0 && errno != EINPROGRESS) {
      HARP_WARN("connect to %s: connect: %s", c->peer.c_str(), strerror(errno));
      return harp_abi::ncclSystemError;
    }
  }
  *out = std::move(c);
  return harp_abi::ncclSuccess;
}

}  // namespace

ncclResult_t harpConnect(int dev, void* handle, void** send_comm) {
  Runtime* rt = harpRuntime();
  if (rt == nullptr) return harp_abi::ncclInternalError;
  if (handle == nullptr || send_comm == nullptr) return harp_abi::ncclInvalidArgument;
  if (dev < 0 || dev >= static_cast<int>(rt->devices.size())) return harp_abi::ncclInvalidArgument;
  *send_comm = nullptr;
  auto* h = static_cast<WireHandle*>(handle);
  if (h->magic != kHandleMagic || h->version != kWireVersion) {
    HARP_WARN("connect: handle is not a HARP v%u listen handle (magic 0x%08x version %u)",
              kWireVersion, h->magic, h->version);
    return harp_abi::ncclInvalidArgument;
  }
  Connector* c = nullptr;
  if (h->stage == static_cast<uint32_t>(HandleStage::kFresh)) {
    std::unique_ptr<Connector> fresh;
    ncclResult_t rc = startConnect(rt, h, &fresh);
    if (rc != harp_abi::ncclSuccess) return rc;
    c = fresh.release();  // owned through the handle until the comm is built or fails
    std::lock_guard<std::mutex> lock(rt->registry_mu);
    rt->connectors.insert(c);
    h->connector = reinterpret_cast<uint64_t>(c);
    h->stage = static_cast<uint32_t>(HandleStage::kConnecting);
  } else if (h->stage == static_cast<uint32_t>(HandleStage::kConnecting)) {
    c = reinterpret_cast<Connector*>(h->connector);
    std::lock_guard<std::mutex> lock(rt->registry_mu);
    if (rt->connectors.count(c) == 0) {
      HARP_WARN("connect: handle refers to an unknown connection attempt");
      return harp_abi::ncclInvalidArgument;
    }
  } else {
    HARP_WARN("connect: handle was already used for a completed connection");
    return harp_abi::ncclInvalidArgument;
  }
  std::unique_ptr<Connector> owned(c);
  bool ready = true;
  for (size_t i = 0; i < c->flows.size(); ++i) {
    std::string err = progressOut(*c, c->flows[i], static_cast<int>(i), rt->params);
    if (!err.empty()) {
      HARP_WARN("connect to %s, flow %zu: %s", c->peer.c_str(), i, err.c_str());
      unregister(rt, c);
      h->stage = static_cast<uint32_t>(HandleStage::kDone);
      bool refused = err.find("refused") != std::string::npos || err.find("secret") != std::string::npos;
      return refused ? harp_abi::ncclRemoteError : harp_abi::ncclSystemError;
    }
    ready &= c->flows[i].stage == OutStage::kReady;
  }
  if (!ready) {
    if (harpNowSeconds() > c->deadline) {
      HARP_WARN("connect to %s: handshake not complete after %.0f s", c->peer.c_str(),
                rt->params.handshake_timeout_s);
      unregister(rt, c);
      h->stage = static_cast<uint32_t>(HandleStage::kDone);
      return harp_abi::ncclSystemError;
    }
    owned.release();  // still pending: keep it owned by the handle
    return harp_abi::ncclSuccess;
  }
  unregister(rt, c);
  h->stage = static_cast<uint32_t>(HandleStage::kDone);
  std::vector<int> fds;
  for (OutFlow& f : c->flows) {
    fds.push_back(f.fd);
    f.fd = -1;
  }
  std::unique_ptr<CommCore> comm = harpMakeComm(CommKind::kSend, fds, c->comm_id, c->chunk_bytes, c->peer);
  if (comm == nullptr) return harp_abi::ncclSystemError;
  HARP_INFO("connected to %s with %zu flow(s)", c->peer.c_str(), c->flows.size());
  *send_comm = comm.release();
  return harp_abi::ncclSuccess;
}

}  // namespace harp
