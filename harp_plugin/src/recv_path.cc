// RecvPath: an instance's receive side — chunk headers, seq lookup, payload straight into the destination.
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "completion_hook.h"
#include "log.h"
#include "flow_paths.h"

namespace harp {
namespace {
constexpr int kRoundsPerFlow = 16;
constexpr uint64_t kMaxSeqAhead = 1u << 20;  // a chunk this far beyond the posts is garbage

bool wouldBlock(int e) { return e == EAGAIN || e == EWOULDBLOCK; }
}  // namespace

bool RecvPath::progress(Flow& f) {
  bool progressed = false;
  for (int round = 0; round < kRoundsPerFlow; ++round) {
    bool step = false;
    switch (f.state) {
      case FlowState::kHeader: step = readHeader(f); break;
      case FlowState::kParked: step = lookupRecv(f); break;
      case FlowState::kPayload: step = readPayload(f); break;
      case FlowState::kIdle:
      case FlowState::kSending:
      case FlowState::kUringBusy:
      case FlowState::kEof:
      case FlowState::kBroken:
        return progressed;  // not a receiving state: nothing to read
    }
    if (!step) break;
    progressed = true;
  }
  return progressed;
}

bool RecvPath::readHeader(Flow& f) {
  if (!f.readable) return false;
  ssize_t n = recv(f.fd, f.recv.hdr + f.recv.hdr_got, kChunkHeaderBytes - f.recv.hdr_got, MSG_DONTWAIT);
  if (n == 0) {
    flowEof(f);
    return true;
  }
  if (n < 0) {
    if (wouldBlock(errno)) {
      f.readable = false;
      return false;
    }
    if (errno == EINTR) return true;
    breakFlow(f, epfd_, harp_abi::ncclRemoteError, "recv(chunk header)", errno);
    return true;
  }
  f.recv.hdr_got += static_cast<size_t>(n);
  if (f.recv.hdr_got < kChunkHeaderBytes) return true;
  std::string err = harpDecodeChunkHeader(f.recv.hdr, kChunkHeaderBytes, f.lane->comm->chunk_bytes,
                                          &f.recv.chunk);
  if (!err.empty()) {
    breakFlow(f, epfd_, harp_abi::ncclRemoteError, ("malformed chunk: " + err).c_str(), 0);
    return true;
  }
  f.state = FlowState::kParked;
  lookupRecv(f);
  return true;
}

// Finds the posted receive for the chunk's seq; stays parked (not reading) until it is posted.
bool RecvPath::lookupRecv(Flow& f) {
  Lane& lane = *f.lane;
  uint64_t seq = f.recv.chunk.seq;
  if (seq >= lane.known_seq) {
    if (seq - lane.known_seq > kMaxSeqAhead) {
      breakFlow(f, epfd_, harp_abi::ncclRemoteError, "chunk for a message far beyond any posted receive", 0);
      return true;
    }
    return false;
  }
  const Posted& p = lane.table[seq % kSlots];
  if (p.seq != seq || p.req == nullptr) {
    breakFlow(f, epfd_, harp_abi::ncclRemoteError, "chunk for a message that is not outstanding", 0);
    return true;
  }
  Request* r = p.req;
  CommCore* c = lane.comm;
  if (f.recv.chunk.total > r->size) {
    c->fail(harp_abi::ncclInvalidUsage,
            "peer %s sent a message of %llu bytes but receive %llu has only %zu bytes of buffer",
            c->peer.c_str(), static_cast<unsigned long long>(f.recv.chunk.total),
            static_cast<unsigned long long>(seq), r->size);
    breakFlow(f, epfd_, harp_abi::ncclInvalidUsage, "message larger than the receive buffer", 0);
    return true;
  }
  int64_t expect = -1;
  int64_t total = static_cast<int64_t>(f.recv.chunk.total);
  if (!r->total.compare_exchange_strong(expect, total, std::memory_order_relaxed) && expect != total) {
    breakFlow(f, epfd_, harp_abi::ncclRemoteError, "chunks of one message disagree on its size", 0);
    return true;
  }
  f.recv.req = r;
  f.recv.got = 0;
  f.state = FlowState::kPayload;
  return true;
}

bool RecvPath::readPayload(Flow& f) {
  Request* r = f.recv.req;
  uint64_t len = f.recv.chunk.len;
  if (f.recv.got < len) {
    if (!f.readable) return false;
    ssize_t n = recv(f.fd, r->data + f.recv.chunk.offset + f.recv.got, static_cast<size_t>(len - f.recv.got),
                     MSG_DONTWAIT);
    if (n == 0) {
      breakFlow(f, epfd_, harp_abi::ncclRemoteError, "the sender closed the connection inside a chunk", 0);
      return true;
    }
    if (n < 0) {
      if (wouldBlock(errno)) {
        f.readable = false;
        return false;
      }
      if (errno == EINTR) return true;
      breakFlow(f, epfd_, harp_abi::ncclRemoteError, "recv(payload)", errno);
      return true;
    }
    f.recv.got += static_cast<uint64_t>(n);
    if (f.recv.got < len) return true;
  }
  r->bytes_done.fetch_add(len, std::memory_order_release);
  notifyCompletion();
  f.recv.req = nullptr;
  f.recv.hdr_got = 0;
  f.state = FlowState::kHeader;
  return true;
}

void RecvPath::flowEof(Flow& f) {
  if (f.recv.hdr_got != 0) {
    breakFlow(f, epfd_, harp_abi::ncclRemoteError, "the sender closed the connection inside a header", 0);
    return;
  }
  f.state = FlowState::kEof;
  if (f.in_epoll) epoll_ctl(epfd_, EPOLL_CTL_DEL, f.fd, nullptr);
  f.in_epoll = false;
  f.lane->comm->eof_flows.fetch_add(1, std::memory_order_acq_rel);
  notifyCompletion();
}

}  // namespace harp
