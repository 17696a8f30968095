// SendPath: an instance's send side — chunk claiming, copying and zero-copy writes, release tracking.
#include <time.h>
#include <unistd.h>
#include <linux/errqueue.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "completion_hook.h"
#include "log.h"
#include "flow_paths.h"

namespace harp {
namespace {
constexpr int kRoundsPerFlow = 16;  // writes per flow per loop turn, for fairness
constexpr uint64_t kPtrMask = (1ULL << 48) - 1;

void creditChunk(Request* r) {
  if (r == nullptr) return;
  r->chunks_done.fetch_add(1, std::memory_order_release);
  notifyCompletion();
}
}  // namespace

SendPath::SendPath(int index, int epfd, ZeroCopyMode zc_mode)
    : epfd_(epfd), zc_mode_(zc_mode), zc_forced_(zc_mode != ZeroCopyMode::kAuto) {
  if (zc_mode_ != ZeroCopyMode::kAuto && zc_mode_ != ZeroCopyMode::kUring) return;
  std::string why;
  uring_ = Uring::create(256, &why);
  if (uring_ == nullptr) {
    HARP_INFO("instance %d: io_uring SEND_ZC unavailable (%s); using MSG_ZEROCOPY", index, why.c_str());
    zc_mode_ = ZeroCopyMode::kMsg;
    return;
  }
  zc_mode_ = ZeroCopyMode::kUring;
  epoll_event uev{};
  uev.events = EPOLLIN;
  uev.data.ptr = this;  // Worker::handleEvents tells this eventfd by its tag
  epoll_ctl(epfd_, EPOLL_CTL_ADD, uring_->eventFd(), &uev);
}

void SendPath::reapCompletions() {
  if (uring_ != nullptr) reapUring();
}

void SendPath::closeGraveyard() {
  for (auto& f : graveyard_) close(f->fd);
}

bool SendPath::claimChunk(Flow& f) {
  Lane& lane = *f.lane;
  if (f.slot >= lane.governor.active()) return false;  // parked by the governor
  while (lane.q_head < lane.q_tail) {
    const Posted& p = lane.queue[lane.q_head % kSlots];
    Request* r = p.req;
    uint64_t c = r->next_chunk.fetch_add(1, std::memory_order_relaxed);
    if (c < r->nchunks) {
      f.send.req = r;
      f.send.offset = c * r->chunk_bytes;
      f.send.len = std::min<uint64_t>(r->chunk_bytes, r->size - f.send.offset);
      f.send.sent = 0;
      f.send.zc = f.zc_capable && f.send.len >= lane.comm->zc_min_bytes && f.send.len > 0;
      ChunkHeader h;
      h.len = static_cast<uint32_t>(f.send.len);
      h.seq = p.seq;
      h.offset = f.send.offset;
      h.total = r->size;
      harpEncodeChunkHeader(h, f.send.hdr);
      f.state = FlowState::kSending;
      return true;
    }
    lane.retired.store(p.seq + 1, std::memory_order_release);
    ++lane.q_head;
  }
  return false;
}

void SendPath::retireExhausted(Lane& lane) {
  while (lane.q_head < lane.q_tail) {
    const Posted& p = lane.queue[lane.q_head % kSlots];
    if (p.req->next_chunk.load(std::memory_order_relaxed) < p.req->nchunks) return;
    lane.retired.store(p.seq + 1, std::memory_order_release);
    ++lane.q_head;
  }
}

void SendPath::checkSendPeer(Flow& f) {
  if (f.state == FlowState::kUringBusy) return;  // decide once the kernel reported the send
  f.readable = false;
  char b;
  ssize_t n = recv(f.fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
  if (n == 0) {
    // The receiver closed. Bytes already written were received; only work still to do fails.
    if (f.state == FlowState::kSending) {
      breakFlow(f, epfd_, harp_abi::ncclRemoteError, "the receiver closed the connection mid-chunk", 0);
    } else {
      f.state = FlowState::kEof;
    }
  } else if (n > 0) {
    breakFlow(f, epfd_, harp_abi::ncclRemoteError, "the receiver sent bytes on a send-only flow", 0);
  } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    breakFlow(f, epfd_, harp_abi::ncclRemoteError, "recv(peek)", errno);
  }
}

bool SendPath::progress(Flow& f) {
  if (f.state == FlowState::kBroken) return false;
  if (f.readable && f.state != FlowState::kEof) checkSendPeer(f);
  if (!f.send.zc_pending.empty() && zc_mode_ == ZeroCopyMode::kMsg) reapErrqueue(f);
  bool progressed = false;
  if (f.state == FlowState::kEof) {
    retireExhausted(*f.lane);
    if (f.lane->q_head < f.lane->q_tail) {
      breakFlow(f, epfd_, harp_abi::ncclRemoteError, "the receiver closed the connection", 0);
    }
    return false;
  }
  for (int round = 0; round < kRoundsPerFlow; ++round) {
    if (f.state == FlowState::kIdle) {
      if (!claimChunk(f)) break;
      progressed = true;
    }
    if (f.state != FlowState::kSending || !f.writable) break;
    bool ok;
    if (f.send.zc && f.send.sent >= kChunkHeaderBytes) {
      ok = zc_mode_ == ZeroCopyMode::kUring ? sendZeroCopyUring(f) : sendZeroCopyMsg(f);
    } else {
      ok = sendCopy(f);
    }
    if (!ok) break;
    progressed = true;
  }
  return progressed;
}

bool SendPath::sendCopy(Flow& f) {
  iovec iov[2];
  int n_iov = 0;
  if (f.send.sent < kChunkHeaderBytes) {
    iov[n_iov++] = {f.send.hdr + f.send.sent, kChunkHeaderBytes - f.send.sent};
  }
  if (!f.send.zc && f.send.len > 0) {
    uint64_t done = f.send.sent > kChunkHeaderBytes ? f.send.sent - kChunkHeaderBytes : 0;
    iov[n_iov++] = {f.send.req->data + f.send.offset + done, static_cast<size_t>(f.send.len - done)};
  }
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = static_cast<size_t>(n_iov);
  ssize_t n = sendmsg(f.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      f.writable = false;
    } else if (errno != EINTR) {
      breakFlow(f, epfd_, harp_abi::ncclRemoteError, "sendmsg", errno);
    }
    return false;
  }
  f.send.sent += static_cast<size_t>(n);
  f.lane->sent_bytes += static_cast<uint64_t>(n);
  if (!f.send.zc && f.send.sent == kChunkHeaderBytes + f.send.len) {
    creditChunk(f.send.req);
    f.send.req = nullptr;
    f.state = FlowState::kIdle;
  }
  return true;
}

bool SendPath::sendZeroCopyMsg(Flow& f) {
  uint64_t done = f.send.sent - kChunkHeaderBytes;
  size_t remaining = static_cast<size_t>(f.send.len - done);
  ssize_t n = send(f.fd, f.send.req->data + f.send.offset + done, remaining,
                   MSG_NOSIGNAL | MSG_DONTWAIT | MSG_ZEROCOPY);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      f.writable = false;
    } else if (errno == ENOBUFS) {
      f.send.zc = false;  // notification budget (optmem) exhausted: copy the rest of this chunk
      return true;
    } else if (errno != EINTR) {
      breakFlow(f, epfd_, harp_abi::ncclRemoteError, "sendmsg(MSG_ZEROCOPY)", errno);
    }
    return false;
  }
  f.send.sent += static_cast<size_t>(n);
  f.lane->sent_bytes += static_cast<uint64_t>(n);
  bool last = f.send.sent == kChunkHeaderBytes + f.send.len;
  f.send.zc_pending.push_back({f.send.zc_next_id++, last ? f.send.req : nullptr, false});
  if (last) {
    f.send.req = nullptr;
    f.state = FlowState::kIdle;
  }
  return true;
}

bool SendPath::sendZeroCopyUring(Flow& f) {
  uint64_t done = f.send.sent - kChunkHeaderBytes;
  size_t remaining = static_cast<size_t>(f.send.len - done);
  uint32_t id = f.send.zc_next_id++;
  uint64_t ud = reinterpret_cast<uint64_t>(&f) | (static_cast<uint64_t>(id & 0xffff) << 48);
  int rc = uring_->sendZc(f.fd, f.send.req->data + f.send.offset + done, remaining, ud);
  if (rc == 0) return false;  // ring full: completions will free room
  if (rc < 0) {
    breakFlow(f, epfd_, harp_abi::ncclSystemError, "io_uring_enter(SEND_ZC)", -rc);
    return false;
  }
  f.send.zc_pending.push_back({id, nullptr, false});
  f.state = FlowState::kUringBusy;
  return true;
}

void SendPath::releaseZc(Flow& f, uint32_t id) {
  for (ZcPending& z : f.send.zc_pending) {
    if (!z.released && (z.id & 0xffff) == (id & 0xffff)) {
      z.released = true;
      break;
    }
  }
  while (!f.send.zc_pending.empty() && f.send.zc_pending.front().released) {
    creditChunk(f.send.zc_pending.front().req);
    f.send.zc_pending.pop_front();
  }
}

void SendPath::reapErrqueue(Flow& f) {
  for (;;) {
    char control[128];
    msghdr msg{};
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    if (recvmsg(f.fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;  // EAGAIN: none left
    for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
      bool v4 = cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR;
      bool v6 = cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR;
      if (!v4 && !v6) continue;
      const auto* serr = reinterpret_cast<const sock_extended_err*>(CMSG_DATA(cm));
      if (serr->ee_origin != SO_EE_ORIGIN_ZEROCOPY || serr->ee_errno != 0) continue;
      if ((serr->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0 && !zc_forced_) {
        // The kernel copied anyway (the route is local or the device cannot scatter-gather):
        // zero-copy only adds notifications here, so later chunks of this flow are copied.
        f.zc_capable = false;
      }
      uint32_t lo = serr->ee_info, hi = serr->ee_data;
      for (ZcPending& z : f.send.zc_pending) {
        if (z.id - lo <= hi - lo) z.released = true;
      }
    }
    while (!f.send.zc_pending.empty() && f.send.zc_pending.front().released) {
      creditChunk(f.send.zc_pending.front().req);
      f.send.zc_pending.pop_front();
    }
  }
}

void SendPath::reapUring() {
  UringCqe cqe;
  bool any = false;
  while (uring_->pop(&cqe)) {
    any = true;
    uring_->noteConsumed();
    Flow& f = *reinterpret_cast<Flow*>(cqe.user_data & kPtrMask);
    uint32_t id = static_cast<uint32_t>(cqe.user_data >> 48);
    if (cqe.flags & IORING_CQE_F_NOTIF) {
      releaseZc(f, id);
      continue;
    }
    bool more = (cqe.flags & IORING_CQE_F_MORE) != 0;
    if (more) uring_->noteExpected();
    if (f.state == FlowState::kUringBusy) {  // else a graveyard or broken flow: just account
      f.state = FlowState::kSending;
      if (cqe.res == -EAGAIN) {
        f.writable = false;
      } else if (cqe.res < 0 && cqe.res != -EINTR) {
        breakFlow(f, epfd_, harp_abi::ncclRemoteError, "io_uring SEND_ZC", -cqe.res);
      } else if (cqe.res > 0) {
        f.send.sent += static_cast<size_t>(cqe.res);
        f.lane->sent_bytes += static_cast<uint64_t>(cqe.res);
        if (f.send.sent == kChunkHeaderBytes + f.send.len) {
          // This submission finished the chunk: its release (notification) carries the credit.
          for (auto it = f.send.zc_pending.rbegin(); it != f.send.zc_pending.rend(); ++it) {
            if ((it->id & 0xffff) == (id & 0xffff)) {
              it->req = f.send.req;
              break;
            }
          }
          f.send.req = nullptr;
          f.state = FlowState::kIdle;
        }
      }
    }
    if (!more) releaseZc(f, id);  // no notification will follow (error, or nothing pinned)
  }
  if (!any) return;
  for (size_t i = 0; i < graveyard_.size();) {
    Flow& g = *graveyard_[i];
    if (g.state != FlowState::kUringBusy && g.send.zc_pending.empty()) {
      close(g.fd);
      graveyard_.erase(graveyard_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
}

}  // namespace harp
