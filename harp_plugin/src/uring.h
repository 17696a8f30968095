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
  // One mmap of the ring fd (the SQ ring, the CQ ring — the same one on kernels with
  // IORING_FEAT_SINGLE_MMAP — or the SQE array).
  struct Mapping {
    void* addr = nullptr;
    size_t len = 0;
  };
  // The submission ring's shared words, inside sq_map_.
  struct SubmissionRing {
    unsigned* head = nullptr;
    unsigned* tail = nullptr;
    unsigned* mask = nullptr;
    unsigned* array = nullptr;
    unsigned* flags = nullptr;
    unsigned entries = 0;
  };
  // The completion ring's shared words and entries, inside cq_map_.
  struct CompletionRing {
    unsigned* head = nullptr;
    unsigned* tail = nullptr;
    unsigned* mask = nullptr;
    void* cqes = nullptr;
  };

  int ring_fd_ = -1;
  int event_fd_ = -1;
  Mapping sq_map_;
  Mapping cq_map_;
  Mapping sqes_;
  SubmissionRing sq_;
  CompletionRing cq_;
  unsigned inflight_ = 0;
};

}  // namespace harp
