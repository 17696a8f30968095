// harp-bench, HARP side: drives the plugin through its ABI exactly as NCCL's proxy would.
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench.h"
#include "plugin_loader.h"

namespace harp_bench {
namespace {

constexpr int kResultFd = 100;

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define BENCH_CHECK(cond, what)                                   \
  do {                                                            \
    if (!(cond)) {                                                \
      fprintf(stderr, "harp-bench (harp): %s failed\n", what);    \
      return 1;                                                   \
    }                                                             \
  } while (0)

struct Link {
  harp_tools::NetApi api;
  void* send = nullptr;
  void* recv = nullptr;
};

// After a polling pass that completed nothing: yield like NCCL's proxy thread, or sleep.
void idle(const Config& cfg) {
  if (cfg.idle_sleep_us > 0) {
    usleep(static_cast<useconds_t>(cfg.idle_sleep_us));
  } else {
    sched_yield();
  }
}

int waitDone(const Config& cfg, Link& l, void* req) {
  for (;;) {
    int done = 0, size = 0;
    if (l.api.test(req, &done, &size) != 0) return -1;
    if (done) return size;
    idle(cfg);
  }
}

// Both sides listen, swap handles over ctl, then connect and accept (a comm each way).
int setup(const Config& cfg, int ctl, Link* l) {
  std::string err;
  void* dl = harp_tools::harpToolsOpen(cfg.lib, &err);
  if (dl == nullptr) {
    fprintf(stderr, "harp-bench: %s\n", err.c_str());
    return 1;
  }
  std::vector<int> versions = harp_tools::harpToolsVersions(dl);
  BENCH_CHECK(!versions.empty() && harp_tools::harpToolsLoad(dl, versions[0], &l->api), "load");
  BENCH_CHECK(l->api.init(harp_tools::harpToolsLogger) == 0,
              "init (the NET/HARP warning above says why: usually no HARP_JOB_SECRET, or no interface "
              "matching HARP_IFNAME)");
  uint8_t mine[128], theirs[128];
  void* lc = nullptr;
  BENCH_CHECK(l->api.listen(0, mine, &lc) == 0, "listen");
  BENCH_CHECK(write(ctl, mine, 128) == 128 && read(ctl, theirs, 128) == 128, "handle exchange");
  double end = now() + 30;
  while (l->send == nullptr || l->recv == nullptr) {
    if (l->send == nullptr) BENCH_CHECK(l->api.connect(0, theirs, &l->send) == 0, "connect");
    if (l->recv == nullptr) BENCH_CHECK(l->api.accept(lc, &l->recv) == 0, "accept");
    BENCH_CHECK(now() < end, "connection setup within 30 s");
  }
  l->api.closeListen(lc);
  return 0;
}

int stream(const Config& cfg, int ctl, Link& l, bool receiver, size_t size) {
  size_t n = messagesFor(cfg, size);
  int window = size >= (16u << 20) ? 4 : cfg.window;
  std::vector<char> buf(size * static_cast<size_t>(receiver ? window : 1) + 1);
  void* comm = receiver ? l.recv : l.send;
  void* mh = nullptr;
  BENCH_CHECK(l.api.regMr(comm, buf.data(), buf.size(), 0x1, &mh) == 0, "regMr");
  std::vector<void*> reqs(static_cast<size_t>(window), nullptr);
  size_t posted = 0, completed = 0;
  auto post = [&](int slot) {
    char* p = buf.data() + (receiver ? static_cast<size_t>(slot) * size : 0);
    void* req = nullptr;
    int rc;
    if (receiver) {
      void* data[1] = {p};
      size_t sz[1] = {size};
      void* mhs[1] = {mh};
      rc = l.api.irecv(comm, 1, data, sz, mhs, &req);
    } else {
      rc = l.api.isend(comm, p, size, mh, &req);
    }
    if (rc != 0) return false;
    reqs[static_cast<size_t>(slot)] = req;
    if (req != nullptr) ++posted;
    return true;
  };
  char go = 'R';
  if (receiver) {
    for (int s = 0; s < window && posted < n; ++s) BENCH_CHECK(post(s), "irecv");
    BENCH_CHECK(write(ctl, &go, 1) == 1, "ready");
  } else {
    BENCH_CHECK(read(ctl, &go, 1) == 1, "ready");
  }
  double t0 = now();
  while (completed < n) {
    size_t before = completed;
    for (int s = 0; s < window; ++s) {
      void*& req = reqs[static_cast<size_t>(s)];
      if (req == nullptr) {
        if (posted < n) BENCH_CHECK(post(s), "post");
        continue;
      }
      int done = 0, got = 0;
      BENCH_CHECK(l.api.test(req, &done, &got) == 0, "test");
      if (!done) continue;
      req = nullptr;
      ++completed;
      if (posted < n) BENCH_CHECK(post(s), "post");
    }
    // Like NCCL's proxy this thread polls; when a pass made no progress it gives the core to the
    // plugin's instance threads (see Config::idle_sleep_us).
    if (completed == before) idle(cfg);
  }
  double secs = now() - t0;
  l.api.deregMr(comm, mh);
  if (receiver) {
    double gbps = static_cast<double>(n) * static_cast<double>(size) / secs / 1e9;
    BENCH_CHECK(write(kResultFd, &gbps, sizeof(gbps)) == sizeof(gbps), "result");
  }
  // Keep sides in lockstep between sizes.
  char sync = 'S';
  if (receiver) BENCH_CHECK(write(ctl, &sync, 1) == 1, "sync");
  else BENCH_CHECK(read(ctl, &sync, 1) == 1, "sync");
  return 0;
}

int pingPong(const Config& cfg, int ctl, Link& l, bool receiver, size_t size) {
  size_t n = messagesFor(cfg, size);
  std::vector<char> sbuf(size + 1), rbuf(size + 1);
  char go = 'R';
  if (receiver) BENCH_CHECK(write(ctl, &go, 1) == 1, "ready");
  else BENCH_CHECK(read(ctl, &go, 1) == 1, "ready");
  double t0 = now();
  for (size_t i = 0; i < n + 1; ++i) {
    if (i == 1) t0 = now();  // first round trip warms up
    for (int phase = 0; phase < 2; ++phase) {
      bool sending = (phase == 0) != receiver;
      void* req = nullptr;
      while (req == nullptr) {
        if (sending) {
          BENCH_CHECK(l.api.isend(l.send, sbuf.data(), size, nullptr, &req) == 0, "isend");
        } else {
          void* data[1] = {rbuf.data()};
          size_t sz[1] = {size};
          BENCH_CHECK(l.api.irecv(l.recv, 1, data, sz, nullptr, &req) == 0, "irecv");
        }
      }
      BENCH_CHECK(waitDone(cfg, l, req) >= 0, "test");
    }
  }
  double usec = (now() - t0) / static_cast<double>(n) / 2 * 1e6;
  if (!receiver) BENCH_CHECK(write(kResultFd, &usec, sizeof(usec)) == sizeof(usec), "result");
  return 0;
}

}  // namespace

int harpSide(const Config& cfg, int ctl, bool receiver) {
  Link l;
  if (setup(cfg, ctl, &l) != 0) return 1;
  for (size_t size : cfg.sizes) {
    int rc = cfg.latency ? pingPong(cfg, ctl, l, receiver, size) : stream(cfg, ctl, l, receiver, size);
    if (rc != 0) return rc;
  }
  l.api.closeSend(l.send);
  l.api.closeRecv(l.recv);
  return 0;
}

}  // namespace harp_bench
