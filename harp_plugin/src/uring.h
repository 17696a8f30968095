// Uring: a minimal io_uring (raw syscalls, no liburing) used only for SEND_ZC sends.
//
// Owned by one engine instance thread; never shared. Completions wake the instance's epoll
// through a registered eventfd.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace harp {

struct UringCqe {
  uint64_t user_data;
  int32_t res;
  uint32_t flags;
};

class Uring {
 public:
  // Sets up a ring and checks that the kernel supports IORING_OP_SEND_ZC. Returns nullptr and
  // fills *why when io_uring is unavailable (old kernel, io_uring_disabled, seccomp).
  static std::unique_ptr<Uring> create(unsigned entries, std::string* why);
  ~Uring();
  Uring(const Uring&) = delete;
  Uring& operator=(const Uring&) = delete;

  // Queues a zero-copy send and submits it. Returns 1 when submitted, 0 when the ring is full
  // (retry later), -errno when io_uring_enter failed.
  int sendZc(int fd, const void* buf, size_t len, uint64_t user_data);
  // Pops one completion; false when none is ready. Never blocks.
  bool pop(UringCqe* cqe);
  // eventfd signalled on every completion (register it with epoll).
  int eventFd() const { return event_fd_; }
  // Completions the kernel still owes (submitted results + notifications).
  unsigned inflight() const { return inflight_; }
  void noteConsumed() { --inflight_; }
  void noteExpected() { ++inflight_; }

 private:
  Uring() = default;
  int ring_fd_ = -1;
  int event_fd_ = -1;
  void* sq_map_ = nullptr;
  size_t sq_map_len_ = 0;
  void* cq_map_ = nullptr;
  size_t cq_map_len_ = 0;
  void* sqes_ = nullptr;
  size_t sqes_len_ = 0;
  unsigned* sq_head_ = nullptr;
  unsigned* sq_tail_ = nullptr;
  unsigned* sq_mask_ = nullptr;
  unsigned* sq_array_ = nullptr;
  unsigned* sq_flags_ = nullptr;
  unsigned* cq_head_ = nullptr;
  unsigned* cq_tail_ = nullptr;
  unsigned* cq_mask_ = nullptr;
  void* cqes_ = nullptr;
  unsigned sq_entries_ = 0;
  unsigned inflight_ = 0;
};

}  // namespace harp
