// socket_util: RAII file descriptors, deadlines and deadline-bounded TCP helpers for the store.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "common/status.h"

namespace lightcc {
namespace rendezvous {

using Clock = std::chrono::steady_clock;

// Owns one file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A point in time that bounds a blocking operation.
class Deadline {
 public:
  // timeout_s is clamped to [0, one year]; NaN counts as 0.
  static Deadline after(double timeout_s);
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at() const { return at_; }
  bool expired() const { return Clock::now() >= at_; }
  // Milliseconds left for poll(2), rounded up, 0 when expired.
  int remainingMs() const;

 private:
  Clock::time_point at_;
};

// "127.0.0.1:45678" or "[::1]:45678".
std::string formatAddress(const sockaddr* address, socklen_t length);
std::string hostPort(const std::string& host, int port);

Status setNonBlocking(int fd, const std::string& what);

// The blocking helpers below give up with Status::Cancelled when the calling thread's interrupt
// check fires (common/interrupt.h; init() installs one, so a void generation's rendezvous ends).

// Connects to host:port, retrying while the server is not listening yet (ECONNREFUSED and other
// transient errors) until the deadline. The socket is non-blocking with TCP_NODELAY set.
Status connectWithRetry(const std::string& host, int port, const Deadline& deadline, UniqueFd* out);

// Send/receive exactly `size` bytes on a non-blocking socket, polling until the deadline. `peer`
// and `what` name the other end and the message for errors ("rendezvous server at h:p, GET reply").
Status sendAll(int fd, const void* data, size_t size, const Deadline& deadline,
               const std::string& peer, const std::string& what);
Status recvAll(int fd, void* data, size_t size, const Deadline& deadline, const std::string& peer,
               const std::string& what);

}  // namespace rendezvous
}  // namespace lightcc
