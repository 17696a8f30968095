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

}  // namespace

int tcpSide(const Config& cfg, int ctl, bool receiver) {
  bool framed = cfg.mode == "socket1";
  int streams = framed ? 1 : cfg.streams;
  std::vector<int> fds;
  if (receiver) {
    sockaddr_in addr{};
    if (!ifAddr(cfg.ifname, &addr)) {
      fprintf(stderr, "harp-bench: no IPv4 address on %s\n", cfg.ifname.c_str());
      return 1;
    }
    addr.sin_port = 0;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    socklen_t len = sizeof(addr);
    if (bind(l, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(l, 64) != 0 ||
        getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        write(ctl, &addr, sizeof(addr)) != sizeof(addr)) {
      perror("harp-bench: listen");
      return 1;
    }
    for (int i = 0; i < streams; ++i) fds.push_back(accept(l, nullptr, nullptr));
    close(l);
  } else {
    sockaddr_in addr{};
    if (read(ctl, &addr, sizeof(addr)) != sizeof(addr)) return 1;
    for (int i = 0; i < streams; ++i) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        perror("harp-bench: connect");
        return 1;
      }
      fds.push_back(fd);
    }
  }
  for (int fd : fds) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  for (size_t size : cfg.sizes) {
    size_t n = messagesFor(cfg, size);
    std::vector<char> buf(size + 8);
    char go = 'R';
    if (receiver ? write(ctl, &go, 1) != 1 : read(ctl, &go, 1) != 1) return 1;
    double t0 = now();
    bool ok = true;
    if (cfg.latency) {
      for (size_t i = 0; i < n && ok; ++i) {
        uint64_t hdr = size;
        if (receiver) {
          ok = recvAll(fds[0], reinterpret_cast<char*>(&hdr), 8) && recvAll(fds[0], buf.data(), hdr) &&
               sendAll(fds[0], reinterpret_cast<char*>(&hdr), 8) && sendAll(fds[0], buf.data(), size);
        } else {
          ok = sendAll(fds[0], reinterpret_cast<char*>(&hdr), 8) && sendAll(fds[0], buf.data(), size) &&
               recvAll(fds[0], reinterpret_cast<char*>(&hdr), 8) && recvAll(fds[0], buf.data(), hdr);
        }
      }
    } else {
      std::vector<std::thread> threads;
      std::vector<int> good(static_cast<size_t>(streams), 1);
      for (int k = 0; k < streams; ++k) {
        threads.emplace_back([&, k] {
          size_t begin, len;
          shareOf(size, streams, k, &begin, &len);
          std::vector<char> mine(len + 8);
          for (size_t i = 0; i < n && good[static_cast<size_t>(k)]; ++i) {
            uint64_t hdr = len;
            bool r = true;
            if (framed) {
              r = receiver ? recvAll(fds[static_cast<size_t>(k)], reinterpret_cast<char*>(&hdr), 8)
                           : sendAll(fds[static_cast<size_t>(k)], reinterpret_cast<char*>(&hdr), 8);
            }
            r = r && (receiver ? recvAll(fds[static_cast<size_t>(k)], mine.data(), len)
                               : sendAll(fds[static_cast<size_t>(k)], mine.data(), len));
            good[static_cast<size_t>(k)] = r;
          }
        });
      }
      for (auto& t : threads) t.join();
      for (int g : good) ok &= g != 0;
    }
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
