// Socket helpers: address formatting, TCP socket creation, resumable exact-length I/O, randomness.
#include "net_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/tcp.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace harp {

socklen_t harpAddrLen(const SockAddr& a) {
  return a.sa.sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

std::string harpAddrToString(const SockAddr& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (a.sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &a.sin.sin_addr, host, sizeof(host));
    port = ntohs(a.sin.sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (a.sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &a.sin6.sin6_addr, host, sizeof(host));
    port = ntohs(a.sin6.sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return "<family " + std::to_string(a.sa.sa_family) + ">";
}

int harpTcpSocket(int family, std::string* err) {
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = std::string("socket: ") + strerror(errno);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

IoStep harpWriteSome(int fd, const uint8_t* buf, size_t len, size_t* done, int* err) {
  while (*done < len) {
    ssize_t n = send(fd, buf + *done, len - *done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return IoStep::kAgain;
      *err = errno;
      return IoStep::kError;
    }
    *done += static_cast<size_t>(n);
  }
  return IoStep::kDone;
}

IoStep harpReadSome(int fd, uint8_t* buf, size_t len, size_t* done, int* err) {
  while (*done < len) {
    ssize_t n = recv(fd, buf + *done, len - *done, MSG_DONTWAIT);
    if (n == 0) return IoStep::kClosed;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return IoStep::kAgain;
      *err = errno;
      return IoStep::kError;
    }
    *done += static_cast<size_t>(n);
  }
  return IoStep::kDone;
}

bool harpRandomBytes(void* out, size_t len) {
  auto* p = static_cast<uint8_t*>(out);
  size_t got = 0;
  while (got < len) {
    ssize_t n = getrandom(p + got, len - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got += static_cast<size_t>(n);
  }
  if (got == len) return true;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  while (got < len) {
    ssize_t n = read(fd, p + got, len - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  return got == len;
}

bool harpPeerIsLocal(int fd) {
  SockAddr peer{};
  socklen_t len = sizeof(peer);
  if (getpeername(fd, &peer.sa, &len) != 0) return false;
  if (peer.sa.sa_family == AF_INET && (ntohl(peer.sin.sin_addr.s_addr) >> 24) == 127) return true;
  if (peer.sa.sa_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&peer.sin6.sin6_addr)) return true;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool local = false;
  for (ifaddrs* a = list; a != nullptr && !local; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != peer.sa.sa_family) continue;
    if (peer.sa.sa_family == AF_INET) {
      local = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr == peer.sin.sin_addr.s_addr;
    } else {
      local = memcmp(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, &peer.sin6.sin6_addr,
                     sizeof(in6_addr)) == 0;
    }
  }
  freeifaddrs(list);
  return local;
}

double harpNowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

}  // namespace harp
