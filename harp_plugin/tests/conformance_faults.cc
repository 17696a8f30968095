// Conformance fault cases: peer death in both directions, handshake refusals, init policy.
#include <netinet/in.h>
#include <poll.h>

#include <vector>

#include "conformance.h"

namespace harp_test {
namespace {

const std::vector<std::string> kEnv = {"HARP_JOB_SECRET=fault-secret", "HARP_IFNAME=lo",
                                       "HARP_NFLOWS=4", "HARP_NINSTANCES=2"};

std::vector<std::string> withEnv(std::vector<std::string> env, const std::string& kv) {
  env.push_back(kv);
  return env;
}

// Polls `req` until it completes or errors; returns the plugin's result (0 = completed).
int waitReq(Peer& p, void* req, double timeout_s, int* size) {
  double end = nowS() + timeout_s;
  for (;;) {
    int done = 0;
    int rc = p.api.test(req, &done, size);
    if (rc != 0 || done) return rc;
    HT_CHECK(nowS() < end, "request neither completed nor failed within %.0f s (hang)", timeout_s);
    usleep(100);
  }
}

// The receiver waits on a receive while the sender is SIGKILLed: test() must fail, not hang.
int senderDies() {
  int sv[2], ctl[2];
  HT_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && pipe(ctl) == 0, "pipes");
  pid_t rx = spawn([&] {
    Peer p(10, kEnv);
    HT_CHECK(p.init() == 0, "init");
    void* r = p.accept(p.listen(sv[0]), 20);
    static char buf[1 << 20];
    void* data[1] = {buf};
    size_t cap[1] = {sizeof(buf)};
    void* req = nullptr;
    HT_CHECK(p.api.irecv(r, 1, data, cap, nullptr, &req) == 0 && req, "irecv");
    int size = 0;
    HT_CHECK(waitReq(p, req, 10, &size) == 0 && size == 1000, "first message");
    HT_CHECK(p.api.irecv(r, 1, data, cap, nullptr, &req) == 0 && req, "irecv 2");
    int rc = waitReq(p, req, 15, &size);
    HT_CHECK(rc == harp_abi::ncclRemoteError || rc == harp_abi::ncclSystemError,
             "expected a remote/system error after the sender died, got %d", rc);
    return 0;
  }, 40);
  pid_t tx = spawn([&] {
    Peer p(10, kEnv);
    HT_CHECK(p.init() == 0, "init");
    void* s = nullptr;
    HT_CHECK(p.connect(sv[1], &s, 20) == 0, "connect");
    static char buf[1000];
    void* req = nullptr;
    while (req == nullptr) HT_CHECK(p.api.isend(s, buf, sizeof(buf), nullptr, &req) == 0, "isend");
    int size = 0;
    HT_CHECK(waitReq(p, req, 10, &size) == 0, "send");
    HT_CHECK(writeAll(ctl[1], "x", 1), "ctl");
    pause();  // killed by the runner
    return 0;
  }, 40);
  char c;
  HT_CHECK(readAll(ctl[0], &c, 1), "sender never reported");
  usleep(100 * 1000);
  kill(tx, SIGKILL);
  waitFor(tx, 5);
  return waitFor(rx, 40);
}

// The sender keeps sending while the receiver is SIGKILLed: test() must fail, not hang.
int receiverDies() {
  int sv[2], ctl[2], go[2];
  HT_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && pipe(ctl) == 0 && pipe(go) == 0, "pipes");
  pid_t rx = spawn([&] {
    Peer p(9, kEnv);
    HT_CHECK(p.init() == 0, "init");
    p.accept(p.listen(sv[0]), 20);
    HT_CHECK(writeAll(ctl[1], "x", 1), "ctl");
    pause();  // killed by the runner
    return 0;
  }, 40);
  pid_t tx = spawn([&] {
    Peer p(9, kEnv);
    HT_CHECK(p.init() == 0, "init");
    void* s = nullptr;
    HT_CHECK(p.connect(sv[1], &s, 20) == 0, "connect");
    char c;
    HT_CHECK(readAll(go[0], &c, 1), "runner never said go");
    std::vector<char> buf(64 << 20);
    double end = nowS() + 15;
    while (nowS() < end) {
      void* req = nullptr;
      int rc = p.api.isend(s, buf.data(), buf.size(), nullptr, &req);
      if (rc != 0) return 0;
      if (req == nullptr) continue;
      int size = 0;
      rc = waitReq(p, req, 15, &size);
      if (rc == harp_abi::ncclRemoteError || rc == harp_abi::ncclSystemError) return 0;
      HT_CHECK(rc == 0, "unexpected result %d", rc);
    }
    HT_CHECK(false, "sends to a dead receiver kept succeeding for 15 s");
    return 1;
  }, 40);
  char c;
  HT_CHECK(readAll(ctl[0], &c, 1), "receiver never reported");
  kill(rx, SIGKILL);
  waitFor(rx, 5);
  HT_CHECK(writeAll(go[1], "g", 1), "go");
  return waitFor(tx, 40);
}

// A connector with the wrong secret (or none) is refused; the listener logs and survives.
int refusedConnector(const std::vector<std::string>& client_env) {
  int sv[2];
  HT_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  pid_t rx = spawn([&] {
    Peer p(12, kEnv);
    HT_CHECK(p.init() == 0, "init");
    void* l = p.listen(sv[0]);
    double end = nowS() + 3;
    while (nowS() < end) {
      void* r = nullptr;
      HT_CHECK(p.api.accept(l, &r) == 0, "accept errored instead of refusing quietly");
      HT_CHECK(r == nullptr, "a comm was accepted from an unauthenticated peer");
      usleep(1000);
    }
    return 0;
  }, 20);
  pid_t tx = spawn([&] {
    Peer p(12, client_env);
    HT_CHECK(p.init() == 0, "init");
    void* s = nullptr;
    int rc = p.connect(sv[1], &s, 10);
    HT_CHECK(rc != 0 && s == nullptr, "connect with a bad secret succeeded (rc %d)", rc);
    return 0;
  }, 20);
  int a = waitFor(tx, 20), b = waitFor(rx, 20);
  return a != 0 ? a : b;
}

int rawConnect(const uint8_t* handle) {
  sockaddr_in6 addr;
  memcpy(&addr, handle + 16, sizeof(addr));  // WireHandle: magic, version, pad, listen_id, addr
  int fd = socket(reinterpret_cast<sockaddr*>(&addr)->sa_family, SOCK_STREAM, 0);
  socklen_t len = addr.sin6_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  HT_CHECK(::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0, "raw connect");
  return fd;
}

// Strangers: garbage, a wrong wire version, and a silent client. The listener refuses each
// with a logged reason, keeps running, and then accepts a legitimate comm.
int strangers() {
  int sv[2], hv[2];
  HT_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, hv) == 0, "pipes");
  pid_t rx = spawn([&] {
    Peer p(11, kEnv);
    HT_CHECK(p.init() == 0, "init");
    void* l = p.listen(sv[0]);
    void* r = nullptr;
    double end = nowS() + 20;
    while (r == nullptr) {
      HT_CHECK(p.api.accept(l, &r) == 0, "accept errored");
      HT_CHECK(nowS() < end, "legitimate peer never accepted");
      usleep(500);
    }
    static char buf[64];
    void* data[1] = {buf};
    size_t cap[1] = {sizeof(buf)};
    void* req = nullptr;
    HT_CHECK(p.api.irecv(r, 1, data, cap, nullptr, &req) == 0 && req, "irecv");
    int size = 0;
    HT_CHECK(waitReq(p, req, 10, &size) == 0 && size == 5 && memcmp(buf, "hello", 5) == 0, "msg");
    return 0;
  }, 30);
  uint8_t handle[128];
  HT_CHECK(readAll(sv[1], handle, sizeof(handle)), "handle");
  // 1. garbage
  int g = rawConnect(handle);
  uint8_t junk[80];
  for (int i = 0; i < 80; ++i) junk[i] = static_cast<uint8_t>(i * 37);
  uint8_t hello[32];
  HT_CHECK(readAll(g, hello, 32), "server hello to garbage client");
  HT_CHECK(writeAll(g, junk, sizeof(junk)), "garbage write");
  // 2. wrong version: prefix {magic "HARP", version 99, kind 2}
  int v = rawConnect(handle);
  HT_CHECK(readAll(v, hello, 32), "server hello");
  uint8_t frame[80] = {0x48, 0x41, 0x52, 0x50, 99, 0, 2, 0};
  HT_CHECK(writeAll(v, frame, sizeof(frame)), "version write");
  uint8_t verdict[48];
  HT_CHECK(readAll(v, verdict, sizeof(verdict)), "no verdict for a wrong version");
  HT_CHECK(verdict[6] == 3 && verdict[7] == 0 && verdict[8] == 2,
           "expected a refusal with reason 2 (version), got kind %d status %d reason %d",
           verdict[6], verdict[7], verdict[8]);
  // 3. silent client: connects and says nothing (must not block the listener).
  int quiet = rawConnect(handle);
  // Then a legitimate sender.
  HT_CHECK(writeAll(hv[0], handle, sizeof(handle)), "handle fwd");
  pid_t tx = spawn([&] {
    Peer p(11, kEnv);
    HT_CHECK(p.init() == 0, "init");
    void* s = nullptr;
    HT_CHECK(p.connect(hv[1], &s, 10) == 0, "connect");
    static char msg[] = "hello";
    void* req = nullptr;
    while (req == nullptr) HT_CHECK(p.api.isend(s, msg, 5, nullptr, &req) == 0, "isend");
    int size = 0;
    HT_CHECK(waitReq(p, req, 10, &size) == 0, "send");
    usleep(200 * 1000);
    return 0;
  }, 30);
  int a = waitFor(tx, 30), b = waitFor(rx, 30);
  close(g);
  close(v);
  close(quiet);
  return a != 0 ? a : b;
}

// Without a secret and without HARP_ALLOW_NO_SECRET=1, init refuses with ncclInvalidUsage.
int initNeedsSecret() {
  return waitFor(spawn([] {
    unsetenv("HARP_JOB_SECRET");
    unsetenv("HARP_ALLOW_NO_SECRET");
    Peer p(10, {"HARP_IFNAME=lo"});
    int rc = p.init();
    HT_CHECK(rc == harp_abi::ncclInvalidUsage, "init without a secret returned %d", rc);
    return 0;
  }, 10), 10);
}

// A malformed setting (here the busy-poll window) makes init fail with ncclInvalidUsage; the
// warning naming the variable is checked by test_harp.py on stderr.
int badSetting() {
  for (const char* v : {"HARP_BUSY_POLL_US=fast", "HARP_BUSY_POLL_US=-5", "HARP_BUSY_POLL_US=9999999"}) {
    pid_t child = spawn([v] {
      Peer p(10, {"HARP_IFNAME=lo", "HARP_JOB_SECRET=x", v});
      int rc = p.init();
      HT_CHECK(rc == harp_abi::ncclInvalidUsage, "init with %s returned %d", v, rc);
      return 0;
    }, 10);
    HT_CHECK(waitFor(child, 10) == 0, "init with %s", v);
  }
  return 0;
}

// Both sides without a secret (HARP_ALLOW_NO_SECRET=1) still handshake and transfer.
int noSecretBothSides() {
  int sv[2];
  HT_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  std::vector<std::string> env = {"HARP_ALLOW_NO_SECRET=1", "HARP_IFNAME=lo", "HARP_NFLOWS=2"};
  pid_t rx = spawn([&] {
    unsetenv("HARP_JOB_SECRET");
    Peer p(12, env);
    HT_CHECK(p.init() == 0, "init");
    void* r = p.accept(p.listen(sv[0]), 10);
    static char buf[16];
    void* data[1] = {buf};
    size_t cap[1] = {sizeof(buf)};
    void* req = nullptr;
    HT_CHECK(p.api.irecv(r, 1, data, cap, nullptr, &req) == 0 && req, "irecv");
    int size = 0;
    HT_CHECK(waitReq(p, req, 10, &size) == 0 && size == 3, "recv");
    return 0;
  }, 20);
  pid_t tx = spawn([&] {
    unsetenv("HARP_JOB_SECRET");
    Peer p(12, env);
    HT_CHECK(p.init() == 0, "init");
    void* s = nullptr;
    HT_CHECK(p.connect(sv[1], &s, 10) == 0, "connect");
    void* req = nullptr;
    while (req == nullptr) HT_CHECK(p.api.isend(s, const_cast<char*>("abc"), 3, nullptr, &req) == 0, "isend");
    int size = 0;
    HT_CHECK(waitReq(p, req, 10, &size) == 0, "send");
    usleep(100 * 1000);
    return 0;
  }, 20);
  int a = waitFor(tx, 20), b = waitFor(rx, 20);
  return a != 0 ? a : b;
}

}  // namespace

std::vector<NamedCase> faultCases() {
  return {
      {"sender_dies", senderDies},
      {"receiver_dies", receiverDies},
      {"wrong_secret", [] { return refusedConnector(withEnv({"HARP_IFNAME=lo"}, "HARP_JOB_SECRET=other")); }},
      {"no_secret_client", [] {
         return refusedConnector({"HARP_IFNAME=lo", "HARP_ALLOW_NO_SECRET=1", "HARP_JOB_SECRET="});
       }},
      {"strangers", strangers},
      {"init_needs_secret", initNeedsSecret},
      {"bad_setting", badSetting},
      {"no_secret_both_sides", noSecretBothSides},
  };
}

}  // namespace harp_test
