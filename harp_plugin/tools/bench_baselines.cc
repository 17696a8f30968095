// harp-bench baselines: socket1 (one framed TCP socket, copying) and tcp (N raw streams).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "bench.h"

namespace harp_bench {
namespace {

constexpr int kResultFd = 100;

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

bool sendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool recvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The first IPv4 address of `ifname` in this network namespace.
bool ifAddr(const std::string& ifname, sockaddr_in* out) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* a = list; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr != nullptr && a->ifa_addr->sa_family == AF_INET && ifname == a->ifa_name) {
      memcpy(out, a->ifa_addr, sizeof(*out));
      found = true;
    }
  }
  freeifaddrs(list);
  return found;
}

// One stream's share of every message: [begin, end) of each message's bytes.
void shareOf(size_t size, int streams, int k, size_t* begin, size_t* len) {
  size_t part = size / static_cast<size_t>(streams);
  *begin = part * static_cast<size_t>(k);
  *len = k == streams - 1 ? size - *begin : part;
}

// The receiver listens on cfg.ifname and tells the sender its address over `ctl`; the sender
// connects `streams` sockets. False (after saying why) if a socket call failed.
bool openStreams(const Config& cfg, int ctl, bool receiver, int streams, std::vector<int>* fds) {
  sockaddr_in addr{};
  if (!receiver) {
    if (read(ctl, &addr, sizeof(addr)) != sizeof(addr)) return false;
    for (int i = 0; i < streams; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        perror("harp-bench: connect");
        return false;
      }
      fds->push_back(fd);
    }
    return true;
  }
  if (!ifAddr(cfg.ifname, &addr)) {
    fprintf(stderr, "harp-bench: no IPv4 address on %s\n", cfg.ifname.c_str());
    return false;
  }
  addr.sin_port = 0;
  int l = socket(AF_INET, SOCK_STREAM, 0);
  socklen_t len = sizeof(addr);
  if (bind(l, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(l, 64) != 0 ||
      getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      write(ctl, &addr, sizeof(addr)) != sizeof(addr)) {
    perror("harp-bench: listen");
    return false;
  }
  for (int i = 0; i < streams; ++i) fds->push_back(accept(l, nullptr, nullptr));
  close(l);
  return true;
}

// n framed round trips of `size` bytes on one socket (the sender starts each).
bool pingPong(int fd, size_t size, size_t n, bool receiver) {
  std::vector<char> buf(size + 8);
  bool ok = true;
  for (size_t i = 0; i < n && ok; ++i) {
    uint64_t hdr = size;
    char* h = reinterpret_cast<char*>(&hdr);
    if (receiver) {
      ok = recvAll(fd, h, 8) && recvAll(fd, buf.data(), hdr) && sendAll(fd, h, 8) && sendAll(fd, buf.data(), size);
    } else {
      ok = sendAll(fd, h, 8) && sendAll(fd, buf.data(), size) && recvAll(fd, h, 8) && recvAll(fd, buf.data(), hdr);
    }
  }
  return ok;
}

// n messages of `size` bytes, each split across the sockets, one thread per socket; `framed`
// puts an 8-byte length before each piece.
bool streamAll(const std::vector<int>& fds, size_t size, size_t n, bool framed, bool receiver) {
  const int streams = static_cast<int>(fds.size());
  std::vector<std::thread> threads;
  std::vector<int> good(fds.size(), 1);
  for (int k = 0; k < streams; ++k) {
    threads.emplace_back([&, k] {
      const int fd = fds[static_cast<size_t>(k)];
      size_t begin, len;
      shareOf(size, streams, k, &begin, &len);
      std::vector<char> mine(len + 8);
      for (size_t i = 0; i < n && good[static_cast<size_t>(k)]; ++i) {
        uint64_t hdr = len;
        char* h = reinterpret_cast<char*>(&hdr);
        bool r = !framed || (receiver ? recvAll(fd, h, 8) : sendAll(fd, h, 8));
        r = r && (receiver ? recvAll(fd, mine.data(), len) : sendAll(fd, mine.data(), len));
        good[static_cast<size_t>(k)] = r;
      }
    });
  }
  for (auto& t : threads) t.join();
  bool ok = true;
  for (int g : good) ok &= g != 0;
  return ok;
}

}  // namespace

int tcpSide(const Config& cfg, int ctl, bool receiver) {
  const bool framed = cfg.mode == "socket1";
  const int streams = framed ? 1 : cfg.streams;
  std::vector<int> fds;
  if (!openStreams(cfg, ctl, receiver, streams, &fds)) return 1;
  for (int fd : fds) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  for (size_t size : cfg.sizes) {
    size_t n = messagesFor(cfg, size);
    char go = 'R';
    if (receiver ? write(ctl, &go, 1) != 1 : read(ctl, &go, 1) != 1) return 1;
    double t0 = now();
    const bool ok = cfg.latency ? pingPong(fds[0], size, n, receiver) : streamAll(fds, size, n, framed, receiver);
    double secs = now() - t0;
    if (!ok) {
      fprintf(stderr, "harp-bench (%s): transfer failed\n", cfg.mode.c_str());
      return 1;
    }
    bool measures = cfg.latency ? !receiver : receiver;
    if (measures) {
      double v = cfg.latency ? secs / static_cast<double>(n) / 2 * 1e6
                             : static_cast<double>(n) * static_cast<double>(size) / secs / 1e9;
      if (write(kResultFd, &v, sizeof(v)) != sizeof(v)) return 1;
    }
    char sync = 'S';
    if (receiver ? write(ctl, &sync, 1) != 1 : read(ctl, &sync, 1) != 1) return 1;
  }
  for (int fd : fds) close(fd);
  return 0;
}

}  // namespace harp_bench
