// Conformance harness: acts as NCCL against every exported ncclNetPlugin_vN of a plugin .so.
//
// Each case runs in forked processes (the plugin is dlopened after fork, with its own env) under
// a hard timeout. Cases: abi (properties, handle size, bad handles), transfer_vN (sizes 0 B ..
// 16 MiB, or 256 MiB with --big; receive buffers larger than sends; 32 requests in flight; random
// interleavings; byte-for-byte checks), and the fault cases in conformance_faults.cc.
// Usage: harp_conformance --lib path/to/libnccl-net.so [--case NAME] [--big]
//        [--ns-recv NS --ns-send NS --ifname PREFIX]   (transfer cases between namespaces)
#include <fcntl.h>
#include <sched.h>

#include <algorithm>
#include <random>
#include <vector>

#include "conformance.h"

namespace harp_test {

const char* g_lib = nullptr;
bool g_big = false;
std::string g_ns_recv, g_ns_send, g_ifname = "lo";

// Moves this (child) process into a network namespace made by `ip netns add`.
static void enterNs(const std::string& ns) {
  if (ns.empty()) return;
  int fd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  HT_CHECK(fd >= 0 && setns(fd, CLONE_NEWNET) == 0, "enter netns %s: %s", ns.c_str(), strerror(errno));
  close(fd);
}

Peer::Peer(int version, const std::vector<std::string>& env) {
  for (const std::string& kv : env) putenv(strdup(kv.c_str()));
  std::string err;
  dl = harp_tools::harpToolsOpen(g_lib, &err);
  HT_CHECK(dl != nullptr, "dlopen %s: %s", g_lib, err.c_str());
  HT_CHECK(harp_tools::harpToolsLoad(dl, version, &api), "no ncclNetPlugin_v%d", version);
}

int Peer::init() { return api.init(harp_tools::harpToolsLogger); }

void* Peer::listen(int fd_out) {
  uint8_t handle[256];
  memset(handle, 0xA5, sizeof(handle));
  void* lcomm = nullptr;
  HT_CHECK(api.listen(0, handle, &lcomm) == 0 && lcomm != nullptr, "listen failed");
  for (int i = 128; i < 256; ++i) HT_CHECK(handle[i] == 0xA5, "listen wrote past 128 bytes (%d)", i);
  HT_CHECK(writeAll(fd_out, handle, 128), "handle pipe write");
  return lcomm;
}

void* Peer::accept(void* lcomm, double timeout_s) {
  void* rcomm = nullptr;
  double end = nowS() + timeout_s;
  while (rcomm == nullptr) {
    HT_CHECK(api.accept(lcomm, &rcomm) == 0, "accept returned an error");
    HT_CHECK(nowS() < end, "accept: no comm after %.0f s", timeout_s);
    if (rcomm == nullptr) usleep(200);
  }
  return rcomm;
}

int Peer::connect(int fd_in, void** scomm, double timeout_s) {
  uint8_t handle[128];
  HT_CHECK(readAll(fd_in, handle, sizeof(handle)), "handle pipe read");
  *scomm = nullptr;
  double end = nowS() + timeout_s;
  while (*scomm == nullptr) {
    int rc = api.connect(0, handle, scomm);
    if (rc != 0) return rc;
    HT_CHECK(nowS() < end, "connect: no comm after %.0f s", timeout_s);
    if (*scomm == nullptr) usleep(200);
  }
  return 0;
}

namespace {

struct Msg {
  size_t size;
  size_t capacity;
};

std::vector<Msg> makePlan(uint64_t seed) {
  std::vector<size_t> sizes = {0, 1, 2, 7, 8, 63, 4095, 4096, 4097, 65535, 65536, 65537,
                               (1 << 20) + 13, 4 << 20, (16 << 20) + 5, 0, 3};
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 96; ++i) {
    int bits = static_cast<int>(rng() % 23);  // log-uniform up to 4 MiB
    sizes.push_back(static_cast<size_t>(rng() % ((1ULL << bits) + 1)));
  }
  if (g_big) sizes.push_back(256u << 20);
  std::vector<Msg> plan;
  for (size_t s : sizes) {
    size_t extra = (rng() % 3 == 0) ? static_cast<size_t>(rng() % 5000) : 0;
    plan.push_back({s, s + extra});
  }
  return plan;
}

struct Slot {
  void* req = nullptr;
  void* mh = nullptr;
  uint8_t* buf = nullptr;
  size_t idx = 0;
};

// Drives one direction of a comm with up to 32 requests in flight and random test order.
void drive(Peer& p, void* comm, bool sender, const std::vector<Msg>& plan, uint64_t seed) {
  std::mt19937_64 rng(seed ^ (sender ? 0x5eULL : 0xa7ULL));
  std::vector<Slot> inflight;
  size_t next = 0, done = 0;
  double end = nowS() + 90;
  while (done < plan.size()) {
    HT_CHECK(nowS() < end, "%s stalled at %zu/%zu messages", sender ? "sender" : "receiver",
             done, plan.size());
    bool can_post = next < plan.size() && inflight.size() < 32;
    // Big messages alone, to bound memory.
    if (can_post && plan[next].capacity > (64u << 20) && !inflight.empty()) can_post = false;
    if (can_post && (inflight.empty() || rng() % 2 == 0)) {
      const Msg& m = plan[next];
      Slot s;
      s.idx = next;
      size_t alloc = std::max<size_t>(1, sender ? m.size : m.capacity);
      s.buf = static_cast<uint8_t*>(malloc(alloc));
      if (sender) fillPattern(s.buf, m.size, seed, next);
      else memset(s.buf, 0xEE, alloc);
      HT_CHECK(p.api.regMr(comm, s.buf, alloc, harp_abi::kNcclPtrHost, &s.mh) == 0, "regMr");
      int rc;
      if (sender) {
        rc = p.api.isend(comm, s.buf, m.size, s.mh, &s.req);
      } else {
        void* data[1] = {s.buf};
        size_t caps[1] = {m.capacity};
        void* mhs[1] = {s.mh};
        s.req = reinterpret_cast<void*>(0x1);  // NCCL may pre-store 0x1 (LL optional completion)
        rc = p.api.irecv(comm, 1, data, caps, mhs, &s.req);
      }
      HT_CHECK(rc == 0, "%s of message %zu (%zu bytes) returned %d", sender ? "isend" : "irecv",
               next, m.size, rc);
      if (s.req == nullptr) {  // back-pressure: try again later
        p.api.deregMr(comm, s.mh);
        free(s.buf);
      } else {
        inflight.push_back(s);
        ++next;
      }
      continue;
    }
    if (inflight.empty()) continue;
    size_t k = static_cast<size_t>(rng() % inflight.size());
    Slot& s = inflight[k];
    int isdone = 0, size = -1;
    int rc = p.api.test(s.req, &isdone, &size);
    HT_CHECK(rc == 0, "test of message %zu returned %d", s.idx, rc);
    if (!isdone) continue;
    const Msg& m = plan[s.idx];
    HT_CHECK(static_cast<size_t>(size) == m.size, "message %zu: test reported %d bytes, sent %zu",
             s.idx, size, m.size);
    if (!sender) {
      long long bad = checkPattern(s.buf, m.size, seed, s.idx);
      HT_CHECK(bad < 0, "message %zu (%zu bytes): first wrong byte at offset %lld", s.idx, m.size, bad);
      for (size_t i = m.size; i < m.capacity; ++i) {
        HT_CHECK(s.buf[i] == 0xEE, "message %zu: byte %zu beyond the message was written", s.idx, i);
      }
      void* data[1] = {s.buf};
      int sizes[1] = {size};
      void* mhs[1] = {s.mh};
      void* freq = reinterpret_cast<void*>(0x2);
      HT_CHECK(p.api.iflush(comm, 1, data, sizes, mhs, &freq) == 0 && freq == nullptr,
               "iflush on host memory must be a no-op returning a NULL request");
    }
    HT_CHECK(p.api.deregMr(comm, s.mh) == 0, "deregMr");
    free(s.buf);
    inflight.erase(inflight.begin() + static_cast<long>(k));
    ++done;
  }
}

int transferCase(int version, int nflows, const std::string& chunk, const std::string& ninst) {
  uint64_t seed = 1000 + static_cast<uint64_t>(version);
  std::vector<std::string> env = {"HARP_JOB_SECRET=conformance-secret", "HARP_IFNAME=" + g_ifname,
                                  "HARP_NFLOWS=" + std::to_string(nflows),
                                  "HARP_CHUNK_BYTES=" + chunk, "HARP_NINSTANCES=" + ninst};
  int sv[2];
  HT_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  std::vector<Msg> plan = makePlan(seed);
  double t = g_big ? 150 : 100;
  pid_t rx = spawn([&] {
    enterNs(g_ns_recv);
    Peer p(version, env);
    HT_CHECK(p.init() == 0, "init");
    void* l = p.listen(sv[0]);
    void* r = p.accept(l, 20);
    drive(p, r, false, plan, seed);
    HT_CHECK(p.api.closeRecv(r) == 0, "closeRecv");
    HT_CHECK(p.api.closeListen(l) == 0, "closeListen");
    HT_CHECK(p.api.finalize() == 0, "finalize");
    return 0;
  }, t);
  pid_t tx = spawn([&] {
    enterNs(g_ns_send);
    Peer p(version, env);
    HT_CHECK(p.init() == 0, "init");
    void* s = nullptr;
    HT_CHECK(p.connect(sv[1], &s, 20) == 0, "connect failed");
    drive(p, s, true, plan, seed);
    HT_CHECK(p.api.closeSend(s) == 0, "closeSend");
    return 0;
  }, t);
  int a = waitFor(rx, t), b = waitFor(tx, t);
  close(sv[0]);
  close(sv[1]);
  return a != 0 ? a : b;
}

}  // namespace

// abi: properties, handle bound, and bad handles, for every exported version, in one process.
int abiCase() {
  return waitFor(spawn([] {
    std::string err;
    void* dl = harp_tools::harpToolsOpen(g_lib, &err);
    HT_CHECK(dl != nullptr, "dlopen: %s", err.c_str());
    std::vector<int> versions = harp_tools::harpToolsVersions(dl);
    HT_CHECK(versions.size() >= 3 && versions.back() == 8, "expected v8..v10+ exported");
    putenv(strdup("HARP_JOB_SECRET=abi"));
    putenv(strdup("HARP_IFNAME=lo"));
    for (int v : versions) {
      harp_tools::NetApi api;
      HT_CHECK(harp_tools::harpToolsLoad(dl, v, &api), "load v%d", v);
      HT_CHECK(api.name == "HARP", "v%d name is '%s'", v, api.name.c_str());
      HT_CHECK(api.init(harp_tools::harpToolsLogger) == 0, "v%d init", v);
      int ndev = 0;
      HT_CHECK(api.devices(&ndev) == 0 && ndev >= 1, "v%d devices: %d", v, ndev);
      harp_tools::NetProps pr;
      HT_CHECK(api.getProperties(0, &pr) == 0, "v%d getProperties", v);
      HT_CHECK(pr.name == "lo" && pr.ptr_support == harp_abi::kNcclPtrHost && pr.speed > 0 &&
               pr.max_recvs == 1, "v%d properties: name %s ptr %d speed %d maxRecvs %d", v,
               pr.name.c_str(), pr.ptr_support, pr.speed, pr.max_recvs);
      HT_CHECK(v == 8 || pr.max_p2p_bytes >= (1u << 30), "v%d maxP2pBytes %zu", v, pr.max_p2p_bytes);
      HT_CHECK(api.getProperties(ndev, &pr) == harp_abi::ncclInvalidArgument, "bad dev accepted");
      uint8_t handle[128];
      void* l = nullptr;
      HT_CHECK(api.listen(0, handle, &l) == 0 && l != nullptr, "listen");
      void* req = nullptr;
      char buf[16];
      HT_CHECK(api.isend(nullptr, buf, 16, nullptr, &req) == harp_abi::ncclInvalidArgument, "isend(NULL comm)");
      HT_CHECK(api.isend(l, buf, 16, nullptr, &req) == harp_abi::ncclInvalidArgument, "isend(listen comm)");
      int done = 0, size = 0;
      HT_CHECK(api.test(nullptr, &done, &size) == harp_abi::ncclInvalidArgument, "test(NULL)");
      uint64_t junk[16] = {0x1234};
      HT_CHECK(api.test(junk, &done, &size) == harp_abi::ncclInvalidArgument, "test(garbage)");
      void* mh = nullptr;
      HT_CHECK(api.regMr(l, buf, 16, harp_abi::kNcclPtrHost, &mh) == harp_abi::ncclInvalidArgument, "regMr(listen)");
      HT_CHECK(api.closeSend(l) == harp_abi::ncclInvalidArgument, "closeSend(listen comm)");
      HT_CHECK(api.closeRecv(nullptr) == harp_abi::ncclInvalidArgument, "closeRecv(NULL)");
      uint8_t bad[128];
      memset(bad, 0x33, sizeof(bad));
      void* s = nullptr;
      HT_CHECK(api.connect(0, bad, &s) == harp_abi::ncclInvalidArgument && s == nullptr, "connect(garbage handle)");
      void* r = nullptr;
      HT_CHECK(api.accept(junk, &r) == harp_abi::ncclInvalidArgument, "accept(garbage)");
      HT_CHECK(api.closeListen(l) == 0, "closeListen");
      HT_CHECK(api.finalize() == 0, "finalize");
    }
    return 0;
  }, 30), 30);
}

}  // namespace harp_test

using namespace harp_test;

int main(int argc, char** argv) {
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--lib" && i + 1 < argc) g_lib = argv[++i];
    else if (a == "--case" && i + 1 < argc) only = argv[++i];
    else if (a == "--big") g_big = true;
    else if (a == "--ns-recv" && i + 1 < argc) g_ns_recv = argv[++i];
    else if (a == "--ns-send" && i + 1 < argc) g_ns_send = argv[++i];
    else if (a == "--ifname" && i + 1 < argc) g_ifname = argv[++i];
  }
  if (g_lib == nullptr) {
    fprintf(stderr, "usage: %s --lib libnccl-net.so [--case NAME] [--big]\n", argv[0]);
    return 2;
  }
  std::vector<NamedCase> cases = {
      {"abi", abiCase},
      {"transfer_v8", [] { return transferCase(8, 1, "512K", "1"); }},
      {"transfer_v9", [] { return transferCase(9, 2, "64K", "2"); }},
      {"transfer_v10", [] { return transferCase(10, 4, "128K", "2"); }},
      {"transfer_v11", [] { return transferCase(11, 8, "256K", "2"); }},
      {"transfer_v12", [] { return transferCase(12, 3, "4096", "1"); }},
  };
  for (NamedCase& c : faultCases()) cases.push_back(c);
  int passed = 0, failed = 0;
  for (NamedCase& c : cases) {
    if (!only.empty() && c.name != only) continue;
    double t0 = nowS();
    int rc = c.run();
    printf("%s %s (%.1f s)\n", rc == 0 ? "PASS" : "FAIL", c.name.c_str(), nowS() - t0);
    fflush(stdout);
    (rc == 0 ? passed : failed)++;
  }
  printf("conformance: %d passed, %d failed\n", passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}
