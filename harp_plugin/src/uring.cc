// Uring: io_uring setup, SEND_ZC submission and completion reaping through raw syscalls.
#include "uring.h"

#include <linux/io_uring.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

namespace harp {
namespace {

int sysSetup(unsigned entries, io_uring_params* p) {
  return static_cast<int>(syscall(__NR_io_uring_setup, entries, p));
}
int sysEnter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags) {
  return static_cast<int>(syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, nullptr, 0));
}
int sysRegister(int fd, unsigned op, const void* arg, unsigned nr) {
  return static_cast<int>(syscall(__NR_io_uring_register, fd, op, arg, nr));
}

unsigned loadAcquire(const unsigned* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
void storeRelease(unsigned* p, unsigned v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

}  // namespace

std::unique_ptr<Uring> Uring::create(unsigned entries, std::string* why) {
  std::unique_ptr<Uring> u(new Uring());  // private constructor: make_unique cannot reach it
  io_uring_params p;
  memset(&p, 0, sizeof(p));
  p.flags = IORING_SETUP_CQSIZE;  // room for results plus the notifications they owe
  p.cq_entries = entries * 8;
  u->ring_fd_ = sysSetup(entries, &p);
  if (u->ring_fd_ < 0) {
    *why = std::string("io_uring_setup: ") + strerror(errno);
    return nullptr;
  }
  // Probe for SEND_ZC (kernel 6.0+).
  size_t probe_len = sizeof(io_uring_probe) + 256 * sizeof(io_uring_probe_op);
  std::vector<uint8_t> probe_buf(probe_len, 0);
  auto* probe = reinterpret_cast<io_uring_probe*>(probe_buf.data());
  if (sysRegister(u->ring_fd_, IORING_REGISTER_PROBE, probe, 256) < 0 ||
      probe->last_op < IORING_OP_SEND_ZC ||
      !(probe->ops[IORING_OP_SEND_ZC].flags & IO_URING_OP_SUPPORTED)) {
    *why = "kernel lacks IORING_OP_SEND_ZC";
    return nullptr;
  }
  u->sq_.entries = p.sq_entries;
  u->sq_map_.len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  u->cq_map_.len = p.cq_off.cqes + p.cq_entries * sizeof(io_uring_cqe);
  bool single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
  if (single) u->sq_map_.len = u->cq_map_.len = std::max(u->sq_map_.len, u->cq_map_.len);
  u->sq_map_.addr = mmap(nullptr, u->sq_map_.len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                    u->ring_fd_, IORING_OFF_SQ_RING);
  if (u->sq_map_.addr == MAP_FAILED) {
    u->sq_map_.addr = nullptr;
    *why = std::string("mmap sq ring: ") + strerror(errno);
    return nullptr;
  }
  if (single) {
    u->cq_map_.addr = u->sq_map_.addr;
  } else {
    u->cq_map_.addr = mmap(nullptr, u->cq_map_.len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                      u->ring_fd_, IORING_OFF_CQ_RING);
    if (u->cq_map_.addr == MAP_FAILED) {
      u->cq_map_.addr = nullptr;
      *why = std::string("mmap cq ring: ") + strerror(errno);
      return nullptr;
    }
  }
  u->sqes_.len = p.sq_entries * sizeof(io_uring_sqe);
  u->sqes_.addr = mmap(nullptr, u->sqes_.len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                  u->ring_fd_, IORING_OFF_SQES);
  if (u->sqes_.addr == MAP_FAILED) {
    u->sqes_.addr = nullptr;
    *why = std::string("mmap sqes: ") + strerror(errno);
    return nullptr;
  }
  auto* sq = static_cast<char*>(u->sq_map_.addr);
  auto* cq = static_cast<char*>(u->cq_map_.addr);
  u->sq_.head = reinterpret_cast<unsigned*>(sq + p.sq_off.head);
  u->sq_.tail = reinterpret_cast<unsigned*>(sq + p.sq_off.tail);
  u->sq_.mask = reinterpret_cast<unsigned*>(sq + p.sq_off.ring_mask);
  u->sq_.array = reinterpret_cast<unsigned*>(sq + p.sq_off.array);
  u->sq_.flags = reinterpret_cast<unsigned*>(sq + p.sq_off.flags);
  u->cq_.head = reinterpret_cast<unsigned*>(cq + p.cq_off.head);
  u->cq_.tail = reinterpret_cast<unsigned*>(cq + p.cq_off.tail);
  u->cq_.mask = reinterpret_cast<unsigned*>(cq + p.cq_off.ring_mask);
  u->cq_.cqes = cq + p.cq_off.cqes;
  u->event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (u->event_fd_ < 0 || sysRegister(u->ring_fd_, IORING_REGISTER_EVENTFD, &u->event_fd_, 1) < 0) {
    *why = std::string("io_uring eventfd: ") + strerror(errno);
    return nullptr;
  }
  return u;
}

Uring::~Uring() {
  if (sqes_.addr != nullptr) munmap(sqes_.addr, sqes_.len);
  if (cq_map_.addr != nullptr && cq_map_.addr != sq_map_.addr) munmap(cq_map_.addr, cq_map_.len);
  if (sq_map_.addr != nullptr) munmap(sq_map_.addr, sq_map_.len);
  if (event_fd_ >= 0) close(event_fd_);
  if (ring_fd_ >= 0) close(ring_fd_);
}

int Uring::sendZc(int fd, const void* buf, size_t len, uint64_t user_data) {
  unsigned tail = *sq_.tail;
  if (tail - loadAcquire(sq_.head) >= sq_.entries) return 0;
  unsigned idx = tail & *sq_.mask;
  auto* sqe = static_cast<io_uring_sqe*>(sqes_.addr) + idx;
  memset(sqe, 0, sizeof(*sqe));
  sqe->opcode = IORING_OP_SEND_ZC;
  sqe->fd = fd;
  sqe->addr = reinterpret_cast<uint64_t>(buf);
  sqe->len = static_cast<uint32_t>(len);
  sqe->msg_flags = MSG_NOSIGNAL | MSG_WAITALL;
  sqe->user_data = user_data;
  sq_.array[idx] = idx;
  storeRelease(sq_.tail, tail + 1);
  int rc;
  do {
    rc = sysEnter(ring_fd_, 1, 0, 0);
  } while (rc < 0 && errno == EINTR);
  inflight_ += 1;  // the result; a notification is counted when the result says F_MORE
  if (rc < 0) return -errno;
  return 1;
}

bool Uring::pop(UringCqe* out) {
  unsigned head = *cq_.head;
  if (head == loadAcquire(cq_.tail)) {
    // Completions that found the CQ full wait in the kernel's overflow list until we enter.
    if ((loadAcquire(sq_.flags) & IORING_SQ_CQ_OVERFLOW) == 0) return false;
    sysEnter(ring_fd_, 0, 0, IORING_ENTER_GETEVENTS);
    if (head == loadAcquire(cq_.tail)) return false;
  }
  const auto* cqe = static_cast<const io_uring_cqe*>(cq_.cqes) + (head & *cq_.mask);
  out->user_data = cqe->user_data;
  out->res = cqe->res;
  out->flags = cqe->flags;
  storeRelease(cq_.head, head + 1);
  return true;
}

}  // namespace harp
