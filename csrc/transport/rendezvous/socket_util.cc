// RAII fds, deadlines, address formatting and deadline-bounded connect/send/recv over TCP.
#include "transport/rendezvous/socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <thread>

#include "common/interrupt.h"

namespace lightcc {
namespace rendezvous {
namespace {

constexpr double kMaxTimeoutSeconds = 365.0 * 24 * 3600;
constexpr auto kFirstRetryDelay = std::chrono::milliseconds(10);
constexpr auto kMaxRetryDelay = std::chrono::milliseconds(500);

// Errors after which the server may still come up: keep retrying until the deadline.
bool isTransientConnectError(int err) {
  return err == ECONNREFUSED || err == ECONNRESET || err == ETIMEDOUT || err == EHOSTUNREACH ||
         err == ENETUNREACH || err == ECONNABORTED || err == EAGAIN || err == EINTR;
}

// How long one poll(2) may sleep: the time left, but short enough for a waiting thread with an
// interrupt check (common/interrupt.h) to run it every kInterruptPollMs.
int pollSliceMs(const Deadline& deadline) {
  const int left = deadline.remainingMs();
  return interruptCheckInstalled() ? std::min(left, static_cast<int>(kInterruptPollMs)) : left;
}

// poll(2) on one fd until it is ready, the deadline passes (0) or the caller is interrupted
// (ECANCELED as a negative errno); returns poll's result otherwise.
int pollUntil(pollfd* pfd, const Deadline& deadline) {
  for (;;) {
    int ready = ::poll(pfd, 1, pollSliceMs(deadline));
    if (ready < 0 && errno == EINTR) ready = 0;
    if (ready != 0) return ready < 0 ? -errno : ready;
    if (interruptRequested()) return -ECANCELED;
    if (deadline.expired()) return 0;
  }
}

// One non-blocking connect attempt to one resolved address, bounded by the deadline.
// Returns the errno of the failure (0 on success) so the caller can decide whether to retry.
int connectOnce(const addrinfo* ai, const Deadline& deadline, UniqueFd* out) {
  UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                       ai->ai_protocol));
  if (!fd.valid()) return errno;
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return errno;
    pollfd pfd{fd.get(), POLLOUT, 0};
    int ready = pollUntil(&pfd, deadline);
    if (ready < 0) return -ready;
    if (ready == 0) return ETIMEDOUT;
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    if (err != 0) return err;
  }
  *out = std::move(fd);
  return 0;
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int UniqueFd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Deadline Deadline::after(double timeout_s) {
  // Negative and NaN mean "now"; `timeout_s > 0` is false for NaN.
  double clamped = timeout_s > 0 ? std::min(timeout_s, kMaxTimeoutSeconds) : 0.0;
  auto span = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(clamped));
  return Deadline(Clock::now() + span);
}

int Deadline::remainingMs() const {
  auto left = at_ - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<decltype(ms)>(ms, 1 << 30));
}

std::string formatAddress(const sockaddr* address, socklen_t length) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (address->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (address->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "address family " + std::to_string(address->sa_family);
}

std::string hostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Status setNonBlocking(int fd, const std::string& what) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Status::SystemError(errnoMessage("fcntl(O_NONBLOCK) on " + what, errno));
  }
  return Status::OK();
}

Status connectWithRetry(const std::string& host, int port, const Deadline& deadline,
                        UniqueFd* out) {
  const std::string where = hostPort(host, port);
  if (port <= 0 || port > 65535) {
    return Status::InvalidArgument("rendezvous port " + std::to_string(port) +
                                   " is out of range 1..65535");
  }
  auto delay = kFirstRetryDelay;
  int last_error = 0;
  std::string last_what;
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (gai == 0) {
      std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
      for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
        last_error = connectOnce(ai, deadline, out);
        if (last_error == 0) return Status::OK();
        if (last_error == ECANCELED) {
          return Status::Cancelled("interrupted while connecting to the rendezvous server at " + where);
        }
        last_what = "connect(" + formatAddress(ai->ai_addr, ai->ai_addrlen) + ")";
        if (!isTransientConnectError(last_error)) {
          return Status::SystemError(
              errnoMessage("rendezvous server at " + where + ": " + last_what, last_error));
        }
      }
    } else if (gai != EAI_AGAIN) {
      return Status::InvalidArgument("cannot resolve rendezvous host '" + host +
                                     "': getaddrinfo: " + ::gai_strerror(gai));
    } else {
      last_what = "getaddrinfo";
      last_error = EAGAIN;
    }
    if (deadline.expired()) break;
    const auto wake = std::min<Clock::time_point>(Clock::now() + delay, deadline.at());
    while (Clock::now() < wake) {  // in slices, so an interrupt check runs while the server is away
      std::this_thread::sleep_for(std::min<Clock::duration>(
          wake - Clock::now(), std::chrono::milliseconds(static_cast<int>(kInterruptPollMs))));
      if (interruptRequested()) {
        return Status::Cancelled("interrupted while waiting for the rendezvous server at " + where);
      }
    }
    delay = std::min<std::chrono::milliseconds>(delay * 2, kMaxRetryDelay);
    if (deadline.expired()) break;
  }
  return Status::Timeout("no rendezvous server reachable at " + where +
                         " before the timeout; last attempt: " +
                         errnoMessage(last_what, last_error) +
                         " (is rank 0 running, and is LIGHTCC_RENDEZVOUS_ADDR right?)");
}

Status sendAll(int fd, const void* data, size_t size, const Deadline& deadline,
               const std::string& peer, const std::string& what) {
  const auto* p = static_cast<const char*>(data);
  size_t sent = 0;
  while (sent < size) {
    ssize_t n = ::send(fd, p + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::PeerFailure(errnoMessage(peer + ": send of " + what + " (" +
                                                  std::to_string(sent) + " of " +
                                                  std::to_string(size) + " bytes sent)",
                                              errno));
    }
    pollfd pfd{fd, POLLOUT, 0};
    int ready = pollUntil(&pfd, deadline);
    if (ready == -ECANCELED) return Status::Cancelled("interrupted while sending " + what + " to " + peer);
    if (ready < 0) {
      return Status::SystemError(errnoMessage("poll for sending " + what + " to " + peer, -ready));
    }
    if (ready == 0) {
      return Status::Timeout(peer + ": timed out sending " + what + " (" + std::to_string(sent) +
                             " of " + std::to_string(size) + " bytes sent)");
    }
  }
  return Status::OK();
}

Status recvAll(int fd, void* data, size_t size, const Deadline& deadline, const std::string& peer,
               const std::string& what) {
  auto* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::recv(fd, p + got, size - got, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      return Status::PeerFailure(peer + " closed the connection while this process waited for " +
                                 what + " (" + std::to_string(got) + " of " +
                                 std::to_string(size) + " bytes received)");
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::PeerFailure(errnoMessage(peer + ": recv of " + what, errno));
    }
    pollfd pfd{fd, POLLIN, 0};
    int ready = pollUntil(&pfd, deadline);
    if (ready == -ECANCELED) return Status::Cancelled("interrupted while waiting for " + what + " from " + peer);
    if (ready < 0) {
      return Status::SystemError(errnoMessage("poll for " + what + " from " + peer, -ready));
    }
    if (ready == 0) {
      return Status::Timeout(peer + ": timed out waiting for " + what + " (" +
                             std::to_string(got) + " of " + std::to_string(size) +
                             " bytes received)");
    }
  }
  return Status::OK();
}

}  // namespace rendezvous
}  // namespace lightcc
