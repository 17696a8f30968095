// Listen side: accepts flows, runs the server half of the handshake, groups flows into comms.
#include <netinet/tcp.h>
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

// Per-flow server stages, moved only by progressIn:
//   kWriteHello -(sent)-> kReadPrefix -(8 bytes, magic+version ok)-> kReadHello
//   -(hello checked)-> kWriteVerdict -(sent, accepted)-> kReady
//   any check fails -> kWriteVerdict with a refusal -(sent or not)-> kDone (closed)
enum class InStage { kWriteHello, kReadPrefix, kReadHello, kWriteVerdict, kReady, kDone };

struct InFlow {
  int fd = -1;
  std::string peer;
  InStage stage = InStage::kWriteHello;
  uint8_t shello[kServerHelloBytes] = {};
  uint8_t chello[kClientHelloBytes] = {};
  uint8_t verdict[kVerdictBytes] = {};
  size_t io = 0;
  ClientHello hello;
  Refusal refusal = Refusal::kNone;
  double deadline = 0;
};

struct Assembly {
  uint64_t comm_id = 0;
  uint64_t chunk_bytes = 0;
  std::string peer;
  std::vector<int> fds;  // by flow index, -1 until it arrives
  int have = 0;
  double deadline = 0;
};

}  // namespace

struct Listener {
  uint32_t magic = kListenMagic;
  int fd = -1;
  uint64_t listen_id = 0;
  std::string where;
  std::vector<InFlow> pending;
  std::vector<Assembly> assemblies;
  ~Listener() {
    if (fd >= 0) close(fd);
    for (InFlow& f : pending) if (f.fd >= 0) close(f.fd);
    for (Assembly& a : assemblies) for (int x : a.fds) if (x >= 0) close(x);
    magic = kDeadMagic;
  }
};

namespace {

void refuse(InFlow& f, Refusal why, const std::string& where) {
  HARP_WARN("listener %s refused a flow from %s: %s", where.c_str(), f.peer.c_str(),
            harpRefusalName(why));
  f.refusal = why;
  Verdict v;
  v.accepted = false;
  v.reason = why;
  harpEncodeVerdict(v, f.chello, "", f.verdict);  // refusals carry no MAC
  f.stage = InStage::kWriteVerdict;
  f.io = 0;
}

// Checks a complete ClientHello against the secret policy and the comm's other flows.
Refusal checkHello(Listener& l, InFlow& f, const Params& params) {
  Refusal r = harpDecodeClientHello(f.chello, kClientHelloBytes, &f.hello);
  if (r != Refusal::kNone) return r;
  bool client_auth = (f.hello.flags & kFlagAuth) != 0;
  if (client_auth != !params.secret.empty()) return Refusal::kAuthMismatch;
  if (!params.secret.empty() && !harpVerifyClientMac(f.shello, f.chello, params.secret)) {
    return Refusal::kBadMac;
  }
  for (const Assembly& a : l.assemblies) {
    if (a.comm_id != f.hello.comm_id) continue;
    if (a.fds.size() != f.hello.nflows || a.chunk_bytes != f.hello.chunk_bytes ||
        a.fds[f.hello.flow_idx] >= 0) {
      return Refusal::kBadFlow;
    }
  }
  return Refusal::kNone;
}

void progressIn(Listener& l, InFlow& f, const Params& params) {
  int err = 0;
  for (;;) {
    switch (f.stage) {
      case InStage::kWriteHello: {
        IoStep s = harpWriteSome(f.fd, f.shello, kServerHelloBytes, &f.io, &err);
        if (s == IoStep::kAgain) return;
        if (s != IoStep::kDone) { f.stage = InStage::kDone; return; }
        f.stage = InStage::kReadPrefix;
        f.io = 0;
        break;
      }
      case InStage::kReadPrefix:
      case InStage::kReadHello: {
        size_t want = f.stage == InStage::kReadPrefix ? kPrefixBytes : kClientHelloBytes;
        IoStep s = harpReadSome(f.fd, f.chello, want, &f.io, &err);
        if (s == IoStep::kAgain) return;
        if (s != IoStep::kDone) {
          HARP_INFO("listener %s: flow from %s closed during the handshake", l.where.c_str(),
                    f.peer.c_str());
          f.stage = InStage::kDone;
          return;
        }
        if (f.stage == InStage::kReadPrefix) {
          Refusal r = harpCheckPrefix(f.chello, kPrefixBytes, FrameKind::kClientHello);
          if (r != Refusal::kNone) { refuse(f, r, l.where); break; }
          f.stage = InStage::kReadHello;
          break;
        }
        Refusal r = checkHello(l, f, params);
        if (r != Refusal::kNone) { refuse(f, r, l.where); break; }
        Verdict v;
        v.accepted = true;
        harpEncodeVerdict(v, f.chello, params.secret, f.verdict);
        f.stage = InStage::kWriteVerdict;
        f.io = 0;
        break;
      }
      case InStage::kWriteVerdict: {
        IoStep s = harpWriteSome(f.fd, f.verdict, kVerdictBytes, &f.io, &err);
        if (s == IoStep::kAgain && f.refusal == Refusal::kNone) return;
        f.stage = (s == IoStep::kDone && f.refusal == Refusal::kNone) ? InStage::kReady : InStage::kDone;
        return;
      }
      case InStage::kReady:
      case InStage::kDone:
        return;
    }
  }
}

void acceptNew(Listener& l, const Params& params) {
  for (;;) {
    SockAddr peer{};
    socklen_t len = sizeof(peer);
    int fd = accept4(l.fd, &peer.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        HARP_WARN("listener %s: accept4: %s", l.where.c_str(), strerror(errno));
      }
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    InFlow f;
    f.fd = fd;
    f.peer = harpAddrToString(peer);
    f.deadline = harpNowSeconds() + params.handshake_timeout_s;
    ServerHello sh;
    sh.flags = params.secret.empty() ? 0 : kFlagAuth;
    sh.listen_id = l.listen_id;
    harpRandomBytes(sh.nonce, kNonceBytes);
    harpEncodeServerHello(sh, f.shello);
    l.pending.push_back(f);
  }
}

// Moves authenticated flows into their comm's assembly; returns a complete one, if any.
bool collect(Listener& l, const Params& params, Assembly* done) {
  double now = harpNowSeconds();
  for (size_t i = 0; i < l.pending.size();) {
    InFlow& f = l.pending[i];
    progressIn(l, f, params);
    if (f.stage != InStage::kReady && f.stage != InStage::kDone && now > f.deadline) {
      HARP_WARN("listener %s: flow from %s: %s", l.where.c_str(), f.peer.c_str(),
                harpRefusalName(Refusal::kTimeout));
      f.stage = InStage::kDone;
    }
    if (f.stage == InStage::kDone) {
      close(f.fd);
    } else if (f.stage == InStage::kReady) {
      Assembly* a = nullptr;
      for (Assembly& x : l.assemblies) if (x.comm_id == f.hello.comm_id) a = &x;
      if (a == nullptr) {
        l.assemblies.emplace_back();
        a = &l.assemblies.back();
        a->comm_id = f.hello.comm_id;
        a->chunk_bytes = f.hello.chunk_bytes;
        a->peer = f.peer;
        a->fds.assign(f.hello.nflows, -1);
        a->deadline = now + params.handshake_timeout_s;
      }
      a->fds[f.hello.flow_idx] = f.fd;
      ++a->have;
    } else {
      ++i;
      continue;
    }
    l.pending.erase(l.pending.begin() + static_cast<long>(i));
  }
  for (size_t i = 0; i < l.assemblies.size(); ++i) {
    Assembly& a = l.assemblies[i];
    if (a.have == static_cast<int>(a.fds.size())) {
      *done = std::move(a);
      l.assemblies.erase(l.assemblies.begin() + static_cast<long>(i));
      return true;
    }
    if (now > a.deadline) {
      HARP_WARN("listener %s: comm from %s got %d of %zu flows in time; dropping it",
                l.where.c_str(), a.peer.c_str(), a.have, a.fds.size());
      for (int x : a.fds) if (x >= 0) close(x);
      l.assemblies.erase(l.assemblies.begin() + static_cast<long>(i));
      return false;
    }
  }
  return false;
}

}  // namespace

ncclResult_t harpListen(int dev, void* handle, void** listen_comm) {
  Runtime* rt = harpRuntime();
  if (rt == nullptr) return harp_abi::ncclInternalError;
  if (handle == nullptr || listen_comm == nullptr) return harp_abi::ncclInvalidArgument;
  if (dev < 0 || dev >= static_cast<int>(rt->devices.size())) {
    HARP_WARN("listen: device %d out of range [0, %zu)", dev, rt->devices.size());
    return harp_abi::ncclInvalidArgument;
  }
  *listen_comm = nullptr;
  SockAddr addr = rt->devices[static_cast<size_t>(dev)].addr;
  if (addr.sa.sa_family == AF_INET) addr.sin.sin_port = 0;
  else addr.sin6.sin6_port = 0;
  auto l = std::make_unique<Listener>();
  std::string err;
  l->fd = harpTcpSocket(addr.sa.sa_family, &err);
  if (l->fd < 0) {
    HARP_WARN("listen on %s: %s", rt->devices[static_cast<size_t>(dev)].name.c_str(), err.c_str());
    return harp_abi::ncclSystemError;
  }
  socklen_t len = harpAddrLen(addr);
  if (bind(l->fd, &addr.sa, len) != 0 || listen(l->fd, 1024) != 0 ||
      getsockname(l->fd, &addr.sa, &len) != 0) {
    HARP_WARN("listen on %s: bind/listen: %s", harpAddrToString(addr).c_str(), strerror(errno));
    return harp_abi::ncclSystemError;
  }
  harpRandomBytes(&l->listen_id, sizeof(l->listen_id));
  l->where = harpAddrToString(addr);
  auto* h = static_cast<WireHandle*>(handle);
  memset(h, 0, sizeof(WireHandle));
  h->magic = kHandleMagic;
  h->version = kWireVersion;
  h->listen_id = l->listen_id;
  memcpy(h->addr, &addr, sizeof(h->addr));
  h->stage = static_cast<uint32_t>(HandleStage::kFresh);
  HARP_INFO("listening on %s", l->where.c_str());
  *listen_comm = l.release();
  return harp_abi::ncclSuccess;
}

ncclResult_t harpAccept(void* listen_comm, void** recv_comm) {
  Runtime* rt = harpRuntime();
  if (rt == nullptr) return harp_abi::ncclInternalError;
  auto* l = static_cast<Listener*>(listen_comm);
  if (l == nullptr || recv_comm == nullptr || l->magic != kListenMagic) {
    return harp_abi::ncclInvalidArgument;
  }
  *recv_comm = nullptr;
  acceptNew(*l, rt->params);
  Assembly a;
  if (!collect(*l, rt->params, &a)) return harp_abi::ncclSuccess;
  std::unique_ptr<CommCore> comm = harpMakeComm(CommKind::kRecv, a.fds, a.comm_id, a.chunk_bytes, a.peer);
  if (comm == nullptr) return harp_abi::ncclSystemError;
  HARP_INFO("accepted a comm from %s with %zu flow(s)", a.peer.c_str(), a.fds.size());
  *recv_comm = comm.release();
  return harp_abi::ncclSuccess;
}

ncclResult_t harpCloseListen(void* listen_comm) {
  auto* l = static_cast<Listener*>(listen_comm);
  if (l == nullptr || l->magic != kListenMagic) return harp_abi::ncclInvalidArgument;
  std::unique_ptr<Listener> owned(l);
  return harp_abi::ncclSuccess;
}

}  // namespace harp
