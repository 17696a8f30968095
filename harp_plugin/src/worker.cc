// Worker: the instance thread's loop, lane attach/detach and the sleep/wake protocol.
#include "worker.h"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "log.h"
#include "net_util.h"

namespace harp {
namespace {
constexpr int kMaxEvents = 64;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Worker::Worker(int index, int core, ZeroCopyMode zc_mode, int busy_poll_us)
    : index_(index), core_(core), busy_poll_us_(busy_poll_us) {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  evfd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, evfd_, &ev);
  send_ = std::make_unique<SendPath>(index_, epfd_, zc_mode);
  recv_ = std::make_unique<RecvPath>(epfd_);
  thread_ = std::thread([this] { run(); });
}

Worker::~Worker() {
  stop_.store(true);
  uint64_t one = 1;
  ssize_t rc = write(evfd_, &one, sizeof(one));
  (void)rc;
  thread_.join();
  send_.reset();  // its io_uring before the epoll set it joined
  close(evfd_);
  close(epfd_);
}

const char* Worker::zcName() const {
  switch (send_->zcMode()) {
    case ZeroCopyMode::kUring: return "io_uring SEND_ZC";
    case ZeroCopyMode::kMsg: return "MSG_ZEROCOPY";
    case ZeroCopyMode::kOff: return "off";
    case ZeroCopyMode::kAuto: break;
  }
  return "auto";
}

void Worker::attach(Lane* lane) {
  {
    std::lock_guard<std::mutex> lock(ctl_mu_);
    ctl_ops_.push_back({lane, true, nullptr});
    ctl_pending_.store(true);
  }
  uint64_t one = 1;
  ssize_t rc = write(evfd_, &one, sizeof(one));
  (void)rc;
}

void Worker::detach(Lane* lane) {
  bool done = false;
  std::unique_lock<std::mutex> lock(ctl_mu_);
  ctl_ops_.push_back({lane, false, &done});
  ctl_pending_.store(true);
  uint64_t one = 1;
  ssize_t rc = write(evfd_, &one, sizeof(one));
  (void)rc;
  ctl_cv_.wait(lock, [&] { return done; });
}

void Worker::wake() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_acquire)) {
    uint64_t one = 1;
    ssize_t rc = write(evfd_, &one, sizeof(one));
    (void)rc;
  }
}

void Worker::wakeIfParked(const Lane& lane) {
  // The instance stores `parked` before its release store of sleeping_, so seeing it asleep
  // (acquire) also shows whether a flow waits for this post.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_acquire) && lane.parked.load(std::memory_order_relaxed)) {
    uint64_t one = 1;
    ssize_t rc = write(evfd_, &one, sizeof(one));
    (void)rc;
  }
}

bool Worker::applyControl() {
  if (!ctl_pending_.load(std::memory_order_acquire)) return false;
  std::vector<CtlOp> ops;
  {
    std::lock_guard<std::mutex> lock(ctl_mu_);
    ops.swap(ctl_ops_);
    ctl_pending_.store(false);
  }
  for (const CtlOp& op : ops) {
    if (op.attach) {
      addLane(op.lane);
    } else {
      dropLane(op.lane);
      std::lock_guard<std::mutex> lock(ctl_mu_);
      *op.done = true;
    }
  }
  ctl_cv_.notify_all();
  return !ops.empty();
}

void Worker::governFlows(Lane& lane) {
  bool busy = lane.q_head < lane.q_tail;
  for (const auto& f : lane.flows) {
    busy = busy || f->state == FlowState::kSending || f->state == FlowState::kUringBusy;
  }
  if (!lane.governor.tick(busy, static_cast<double>(nowNs()) * 1e-9)) return;
  // Acknowledged = written minus what still sits in the send queues (TIOCOUTQ: unsent + unacked).
  uint64_t queued = 0;
  for (const auto& f : lane.flows) {
    int n = 0;
    if (f->fd >= 0 && ioctl(f->fd, TIOCOUTQ, &n) == 0 && n > 0) queued += static_cast<uint64_t>(n);
  }
  const bool moved = lane.governor.closeWindow(lane.sent_bytes - std::min(queued, lane.sent_bytes));
  if (moved) {
    HARP_INFO("instance %d: sending to %s on %d of %zu flows (%.0f Mbit/s in the last window)", index_,
              lane.comm->peer.c_str(), lane.governor.active(), lane.flows.size(), lane.governor.lastRate() * 8e-6);
  }
}

void Worker::addLane(Lane* lane) {
  for (auto& f : lane->flows) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = f.get();
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, f->fd, &ev) != 0) {
      breakFlow(*f, epfd_, harp_abi::ncclSystemError, "epoll_ctl(ADD)", errno);
      continue;
    }
    f->in_epoll = true;
    const ZeroCopyMode zc_mode = send_->zcMode();
    if (zc_mode != ZeroCopyMode::kOff && !send_->zcForced() && harpPeerIsLocal(f->fd)) {
      // A local peer (another process on this host) gets a kernel copy of every zero-copy send
      // plus the notification work: measured at about a third of the copying path's rate.
      HARP_INFO("instance %d: flow %d to local peer %s: zero-copy off", index_, f->index,
                lane->comm->peer.c_str());
    } else if (zc_mode == ZeroCopyMode::kUring) {
      f->zc_capable = true;
    } else if (zc_mode == ZeroCopyMode::kMsg) {
      int one = 1;
      f->zc_capable = setsockopt(f->fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) == 0;
    }
  }
  lanes_.push_back(lane);
}

void Worker::dropLane(Lane* lane) {
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (lanes_[i] == lane) {
      lanes_.erase(lanes_.begin() + static_cast<long>(i));
      break;
    }
  }
  for (auto& f : lane->flows) {
    if (f->in_epoll) epoll_ctl(epfd_, EPOLL_CTL_DEL, f->fd, nullptr);
    f->in_epoll = false;
    bool owed = false;
    for (ZcPending& z : f->send.zc_pending) {
      z.req = nullptr;  // the comm is going away: nobody tests these requests any more
      if (!z.released) owed = true;
    }
    if (f->state == FlowState::kUringBusy || (owed && send_->zcMode() == ZeroCopyMode::kUring)) {
      // Abortive close so the kernel drops queued skbs and sends the notifications promptly.
      linger lg{1, 0};
      setsockopt(f->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
      shutdown(f->fd, SHUT_RDWR);
      f->lane = nullptr;
      f->send.req = nullptr;
      send_->bury(std::move(f));
      continue;
    }
    close(f->fd);
    f->fd = -1;
  }
  lane->flows.clear();
}

bool Worker::drainRings() {
  bool got = false;
  for (Lane* lane : lanes_) {
    Posted p;
    while (lane->ring.pop(&p)) {
      got = true;
      if (lane->comm->kind == CommKind::kSend) {
        lane->queue[lane->q_tail % kSlots] = p;
        ++lane->q_tail;
      } else {
        lane->table[p.seq % kSlots] = p;
      }
      lane->known_seq = p.seq + 1;
    }
  }
  return got;
}

bool Worker::anyWork() const {
  for (const Lane* lane : lanes_) {
    if (!lane->ring.empty()) return true;
  }
  return ctl_pending_.load();
}

int Worker::handleEvents(int timeout_ms) {
  epoll_event events[kMaxEvents];
  int n = epoll_wait(epfd_, events, kMaxEvents, timeout_ms);
  for (int i = 0; i < n; ++i) {
    void* tag = events[i].data.ptr;
    if (tag == nullptr) {
      uint64_t v;
      ssize_t rc = read(evfd_, &v, sizeof(v));
      (void)rc;
      continue;
    }
    if (tag == send_.get()) {  // the send path's io_uring eventfd
      uint64_t v;
      ssize_t rc = read(send_->uringEventFd(), &v, sizeof(v));
      (void)rc;
      continue;
    }
    Flow* f = static_cast<Flow*>(tag);
    uint32_t e = events[i].events;
    if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) f->readable = true;
    if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR)) f->writable = true;
  }
  return n;
}

void Worker::run() {
  if (core_ >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core_, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
      HARP_INFO("instance %d: could not pin to core %d; running unpinned", index_, core_);
    }
  }
  char name[16];
  snprintf(name, sizeof(name), "harp-inst%d", index_);
  pthread_setname_np(pthread_self(), name);
  const int64_t busy_poll_ns = static_cast<int64_t>(busy_poll_us_) * 1000;
  int64_t last_work = nowNs();
  while (!stop_.load(std::memory_order_relaxed)) {
    bool progressed = applyControl();
    progressed |= drainRings();
    send_->reapCompletions();
    bool zc_owed = send_->completionsOwed();
    for (Lane* lane : lanes_) {
      bool send = lane->comm->kind == CommKind::kSend;
      bool parked = false;
      for (auto& f : lane->flows) {
        progressed |= send ? send_->progress(*f) : recv_->progress(*f);
        zc_owed |= !f->send.zc_pending.empty();
        parked |= f->state == FlowState::kParked;
      }
      if (send) {
        send_->retireExhausted(*lane);
        governFlows(*lane);
      }
      if (parked != lane->parked_view) {
        lane->parked_view = parked;
        lane->parked.store(parked, std::memory_order_relaxed);
      }
    }
    if (progressed) {
      last_work = nowNs();
      handleEvents(0);
      continue;
    }
    if (nowNs() - last_work < busy_poll_ns) {
      // Busy-poll window: let other threads on this core run between rounds.
      sched_yield();
      handleEvents(0);
      continue;
    }
    // About to sleep: announce it, then re-check for work a producer published before seeing
    // the flag (the producer fences between its push and its read of sleeping_).
    sleeping_.store(true, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (anyWork()) {
      sleeping_.store(false, std::memory_order_relaxed);
      continue;
    }
    int n = handleEvents(zc_owed ? 1 : 1000);
    sleeping_.store(false, std::memory_order_relaxed);
    if (n > 0) last_work = nowNs();  // woken by work: poll on for the rest of the exchange
  }
  for (Lane* lane : lanes_) {
    for (auto& f : lane->flows) {
      if (f->fd >= 0) close(f->fd);
      f->fd = -1;
    }
  }
  send_->closeGraveyard();
}

void breakFlow(Flow& f, int epfd, ncclResult_t code, const char* what, int err) {
  if (f.state == FlowState::kBroken) return;
  f.state = FlowState::kBroken;
  if (f.lane != nullptr) {
    CommCore* c = f.lane->comm;
    if (err != 0) {
      c->fail(code, "peer %s, flow %d: %s failed: %s", c->peer.c_str(), f.index, what, strerror(err));
    } else {
      c->fail(code, "peer %s, flow %d: %s", c->peer.c_str(), f.index, what);
    }
  }
  if (f.in_epoll) epoll_ctl(epfd, EPOLL_CTL_DEL, f.fd, nullptr);
  f.in_epoll = false;
}

}  // namespace harp
