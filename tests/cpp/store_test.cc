// Tests SHA-256/HMAC-SHA256 (FIPS 180-4, RFC 4231 vectors) and the rendezvous store end to end.
//
// Build and run from the repository root (loopback only; a few seconds; prints "N passed, M failed"
// and exits non-zero on failure). The g++ line is one command:
//   g++ -std=c++17 -O1 -Wall -Wextra -pthread -Icsrc -Iharp_plugin/include -o /tmp/store_test
//       tests/cpp/store_test.cc csrc/common/status.cc
//       harp_plugin/src/hmac.cc csrc/transport/rendezvous/*.cc
//   timeout 180 /tmp/store_test
// (CMake with -DLIGHTCC_BUILD_TESTS=ON builds it as `store_test` against lightcc_core.)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/rendezvous/store_crypto.h"
#include "common/status.h"
#include "transport/rendezvous/socket_util.h"
#include "transport/rendezvous/store.h"
#include "transport/rendezvous/store_auth.h"
#include "transport/rendezvous/store_client.h"
#include "transport/rendezvous/store_collectives.h"
#include "transport/rendezvous/store_server.h"
#include "transport/rendezvous/store_wire.h"

using namespace lightcc;
using namespace lightcc::rendezvous;

namespace {

std::atomic<int> g_failed_checks{0};

#define CHECK(cond, msg)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      ++g_failed_checks;                                                              \
      std::printf("  CHECK failed at %s:%d: %s -- %s\n", __FILE__, __LINE__, #cond,   \
                  std::string(msg).c_str());                                          \
    }                                                                                 \
  } while (0)
#define CHECK_OK(expr)                                                               \
  do {                                                                               \
    ::lightcc::Status _st = (expr);                                                  \
    CHECK(_st.ok(), #expr + std::string(" -> ") + _st.message());                    \
  } while (0)

const char kSecret[] = "0123456789abcdef0123456789abcdef-test-secret";
constexpr double kTimeout = 10.0;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string hexOf(const Sha256Digest& d) { return toHex(d.data(), d.size()); }

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Redirects fd 2 into a temporary file for its lifetime so tests can read the server's log lines.
class StderrCapture {
 public:
  StderrCapture() {
    char path[] = "/tmp/store_test_stderr_XXXXXX";
    file_fd_ = ::mkstemp(path);
    ::unlink(path);
    std::fflush(stderr);
    saved_fd_ = ::dup(STDERR_FILENO);
    ::dup2(file_fd_, STDERR_FILENO);
  }
  ~StderrCapture() {
    std::fflush(stderr);
    ::dup2(saved_fd_, STDERR_FILENO);
    ::close(saved_fd_);
    ::close(file_fd_);
  }
  std::string text() const {
    std::string out;
    char buf[4096];
    off_t offset = 0;
    ssize_t n;
    while ((n = ::pread(file_fd_, buf, sizeof(buf), offset)) > 0) {
      out.append(buf, static_cast<size_t>(n));
      offset += n;
    }
    return out;
  }
  // Waits up to 2 s for `part` to show up (the server thread logs asynchronously).
  bool waitFor(const std::string& part) const {
    for (int i = 0; i < 200; ++i) {
      if (contains(text(), part)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  int file_fd_ = -1;
  int saved_fd_ = -1;
};

std::unique_ptr<StoreServer> startServer(uint64_t generation = 1,
                                         const std::string& secret = kSecret) {
  std::unique_ptr<StoreServer> server;
  Status st = StoreServer::start("127.0.0.1", 0, secret, generation, &server);
  if (!st.ok()) {
    std::printf("  cannot start a store server: %s\n", st.message().c_str());
    std::exit(2);
  }
  return server;
}

std::unique_ptr<StoreClient> connectClient(const StoreServer& server, int rank,
                                           uint64_t generation = 1,
                                           const std::string& secret = kSecret,
                                           Status* status = nullptr) {
  std::unique_ptr<StoreClient> client;
  Status st = StoreClient::connect("127.0.0.1", server.port(), secret, generation, rank, kTimeout,
                                   &client);
  if (status != nullptr) *status = st;
  else CHECK(st.ok(), "connect rank " + std::to_string(rank) + ": " + st.message());
  return client;
}

// A raw TCP connection to the server, for speaking (broken) protocol by hand.
UniqueFd rawConnect(int port) {
  UniqueFd fd;
  Status st = connectWithRetry("127.0.0.1", port, Deadline::after(kTimeout), &fd);
  CHECK(st.ok(), st.message());
  return fd;
}

bool rawSend(int fd, const std::string& bytes) {
  return sendAll(fd, bytes.data(), bytes.size(), Deadline::after(kTimeout), "test", "raw").ok();
}

// True when the server closes the connection within the timeout (reading and discarding bytes).
bool waitForClose(int fd, double timeout_s) {
  Deadline deadline = Deadline::after(timeout_s);
  char buf[4096];
  while (!deadline.expired()) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, deadline.remainingMs()) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
  }
  return false;
}

// Runs the client half of the handshake on a raw socket so a test can then misbehave.
bool rawHandshake(int fd, uint64_t generation) {
  HandshakeTranscript t;
  t.generation = generation;
  t.rank = 99;
  if (!generateNonce(t.client_nonce.data(), kNonceBytes).ok()) return false;
  rawSend(fd, FrameWriter(Opcode::kHello)
                  .raw(kProtocolMagic, 4)
                  .u16(t.version)
                  .u64(t.generation)
                  .i32(t.rank)
                  .raw(t.client_nonce.data(), kNonceBytes)
                  .finish());
  uint8_t challenge[kFrameHeaderBytes + 1 + kNonceBytes];
  if (!recvAll(fd, challenge, sizeof(challenge), Deadline::after(kTimeout), "test", "CHALLENGE").ok())
    return false;
  std::memcpy(t.server_nonce.data(), challenge + kFrameHeaderBytes + 1, kNonceBytes);
  Proof proof = clientProof(kSecret, t);
  rawSend(fd, FrameWriter(Opcode::kAuth).raw(proof.data(), proof.size()).finish());
  uint8_t welcome[kFrameHeaderBytes + 1 + kProofBytes];
  if (!recvAll(fd, welcome, sizeof(welcome), Deadline::after(kTimeout), "test", "WELCOME").ok())
    return false;
  return welcome[kFrameHeaderBytes] == static_cast<uint8_t>(Opcode::kWelcome);
}

// Checks that a freshly connected client can still use the server.
void checkServerStillServes(const StoreServer& server, const std::string& tag) {
  auto client = connectClient(server, 7);
  if (!client) return;
  CHECK_OK(client->set("alive/" + tag, "yes"));
  std::string value;
  CHECK_OK(client->get("alive/" + tag, &value, 1.0));
  CHECK(value == "yes", "after " + tag + " the server answered '" + value + "'");
}

// ---- SHA-256 / HMAC ----

void testSha256Vectors() {
  struct Vector {
    std::string message;
    const char* digest;
  };
  const Vector vectors[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrl"
       "mnopqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
      {std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
  for (const Vector& v : vectors) {
    CHECK(hexOf(sha256(v.message.data(), v.message.size())) == v.digest,
          "sha256 of " + std::to_string(v.message.size()) + " bytes");
    // The same digest when fed in uneven pieces (crossing block boundaries).
    harp::Sha256 pieces;
    size_t at = 0;
    for (size_t step = 1; at < v.message.size(); step = step * 3 % 97 + 1) {
      size_t n = std::min(step, v.message.size() - at);
      pieces.update(v.message.data() + at, n);
      at += n;
    }
    Sha256Digest digest;
    pieces.finish(digest.data());
    CHECK(hexOf(digest) == v.digest, "incremental sha256");
  }
}

void testHmacRfc4231() {
  struct Vector {
    std::string key;
    std::string data;
    const char* mac;
    size_t compare_bytes;
  };
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4.push_back(static_cast<char>(i));
  const Vector vectors[] = {
      {std::string(20, '\x0b'), "Hi There",
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", 32},
      {"Jefe", "what do ya want for nothing?",
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", 32},
      {std::string(20, '\xaa'), std::string(50, '\xdd'),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe", 32},
      {key4, std::string(50, '\xcd'),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", 32},
      {std::string(20, '\x0c'), "Test With Truncation", "a3b6167473100ee06e0c796c2955552b", 16},
      {std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", 32},
      {std::string(131, '\xaa'),
       "This is a test using a larger than block-size key and a larger than block-size data. The "
       "key needs to be hashed before being used by the HMAC algorithm.",
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", 32},
  };
  int case_number = 1;
  for (const Vector& v : vectors) {
    Sha256Digest mac = hmacSha256(v.key, v.data.data(), v.data.size());
    CHECK(toHex(mac.data(), v.compare_bytes) == v.mac,
          "RFC 4231 case " + std::to_string(case_number) + ": got " + hexOf(mac));
    ++case_number;
  }
}

void testCompareAndNonce() {
  const char a[] = "same bytes here";
  const char b[] = "same bytes hern";
  CHECK(constantTimeEqual(a, a, sizeof(a)), "equal buffers");
  CHECK(!constantTimeEqual(a, b, sizeof(a)), "buffers differing in the last byte");
  CHECK(constantTimeEqual(a, b, 0), "empty comparison");
  Nonce n1{}, n2{}, zero{};
  CHECK_OK(generateNonce(n1.data(), n1.size()));
  CHECK_OK(generateNonce(n2.data(), n2.size()));
  CHECK(n1 != n2, "two nonces are equal");
  CHECK(n1 != zero, "nonce is all zeros");
}

// ---- wire codec ----

void testWireCodec() {
  std::string frame = FrameWriter(Opcode::kGet).str("key").u32(1234).finish();
  uint32_t length = 0;
  CHECK_OK(parseFrameLength(reinterpret_cast<const uint8_t*>(frame.data()), 100, &length));
  CHECK(length == frame.size() - kFrameHeaderBytes, "length header");
  const auto* body = reinterpret_cast<const uint8_t*>(frame.data()) + kFrameHeaderBytes;
  FrameReader ok(body, length);
  std::string key;
  uint32_t ms = 0;
  CHECK(ok.str("key", 1, 10, &key) && ok.u32("ms", &ms) && ok.finish(), ok.error());
  CHECK(key == "key" && ms == 1234, "decoded fields");

  FrameReader truncated(body, length - 2);
  truncated.str("key", 1, 10, &key);
  CHECK(!truncated.u32("timeout_ms", &ms), "a truncated field must fail");
  CHECK(contains(truncated.error(), "timeout_ms"), truncated.error());

  FrameReader trailing(body, length);
  trailing.str("key", 1, 10, &key);
  CHECK(!trailing.finish(), "trailing bytes must fail");

  FrameReader too_long(body, length);
  CHECK(!too_long.str("key", 1, 2, &key), "a string over its limit must fail");
  CHECK(!parseFrameLength(reinterpret_cast<const uint8_t*>(frame.data()), 3, &length).ok(),
        "a frame over the limit must fail");
}

// ---- store: basic operations ----

void testSetGetAddWait() {
  auto server = startServer();
  CHECK(server->port() > 0, "bound port");
  auto client = connectClient(*server, 0);
  if (!client) return;
  CHECK_OK(client->set("a", "alpha"));
  CHECK_OK(client->set("empty", ""));
  CHECK_OK(client->set("binary", std::string("\0\xff\n", 3)));
  std::string value;
  CHECK_OK(client->get("a", &value, 1.0));
  CHECK(value == "alpha", value);
  CHECK_OK(client->get("empty", &value, 1.0));
  CHECK(value.empty(), value);
  CHECK_OK(client->get("binary", &value, 1.0));
  CHECK(value == std::string("\0\xff\n", 3), "binary value");
  CHECK_OK(client->set("a", "again"));
  CHECK_OK(client->get("a", &value, 1.0));
  CHECK(value == "again", "overwrite: " + value);

  int64_t counter = 0;
  CHECK_OK(client->add("n", 5, &counter));
  CHECK(counter == 5, std::to_string(counter));
  CHECK_OK(client->add("n", -7, &counter));
  CHECK(counter == -2, std::to_string(counter));
  CHECK_OK(client->get("n", &value, 1.0));
  CHECK(value == "-2", "counter as text: " + value);
  Status not_number = client->add("a", 1, &counter);
  CHECK(not_number.code() == StatusCode::kInvalidArgument, not_number.message());
  CHECK(contains(not_number.message(), "'a'"), not_number.message());

  CHECK_OK(client->wait({"a", "n", "empty"}, 1.0));
  CHECK_OK(client->wait({}, 0.0));

  Status bad_key = client->set("", "x");
  CHECK(bad_key.code() == StatusCode::kInvalidArgument, bad_key.message());
  Status big_value = client->set("big", std::string(kMaxValueBytes + 1, 'x'));
  CHECK(big_value.code() == StatusCode::kInvalidArgument, big_value.message());
  // Values right at the limit go through.
  CHECK_OK(client->set("big", std::string(kMaxValueBytes, 'y')));
  CHECK_OK(client->get("big", &value, 5.0));
  CHECK(value.size() == kMaxValueBytes, std::to_string(value.size()));
}

void testGetAndWaitTimeout() {
  auto server = startServer();
  auto client = connectClient(*server, 3);
  if (!client) return;
  std::string value;
  auto start = std::chrono::steady_clock::now();
  Status st = client->get("never/set", &value, 0.3);
  double elapsed = secondsSince(start);
  CHECK(st.code() == StatusCode::kTimeout, st.message());
  CHECK(contains(st.message(), "'never/set'") && contains(st.message(), "rank 3"), st.message());
  CHECK(elapsed >= 0.29 && elapsed < 3.0, "get timed out after " + std::to_string(elapsed) + " s");

  CHECK_OK(client->set("present", "1"));
  st = client->wait({"present", "missing/one", "missing/two"}, 0.2);
  CHECK(st.code() == StatusCode::kTimeout, st.message());
  CHECK(contains(st.message(), "'missing/one'"), st.message());
  // The stream stays usable after a timeout.
  CHECK_OK(client->get("present", &value, 1.0));
  CHECK(value == "1", value);
  st = client->get("x", &value, -1.0);
  CHECK(st.code() == StatusCode::kInvalidArgument, st.message());
}

// ---- store: many clients as threads ----

void testThreads() {
  auto server = startServer();
  constexpr int kRanks = 8;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kRanks);
  std::atomic<int> counter_max{0};
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      std::unique_ptr<StoreClient> client;
      Status st = StoreClient::connect("127.0.0.1", server->port(), kSecret, 1, rank, kTimeout,
                                       &client);
      std::vector<std::string> all;
      int64_t count = 0;
      if (st.ok()) st = allgather(*client, "hosts", rank, kRanks, "host-" + std::to_string(rank),
                                  &all, kTimeout);
      for (int r = 0; st.ok() && r < kRanks; ++r) {
        if (all[r] != "host-" + std::to_string(r)) {
          st = Status::Internal("allgather[" + std::to_string(r) + "]=" + all[r]);
        }
      }
      for (int i = 0; st.ok() && i < 50; ++i) st = client->add("shared/counter", 1, &count);
      if (st.ok()) st = barrier(*client, "after-adds", kRanks, kTimeout);
      std::string total;
      if (st.ok()) st = client->get("shared/counter", &total, kTimeout);
      if (st.ok() && total != std::to_string(50 * kRanks)) st = Status::Internal("total " + total);
      int seen = counter_max.load();
      while (count > seen && !counter_max.compare_exchange_weak(seen, static_cast<int>(count))) {
      }
      if (!st.ok()) errors[rank] = st.message();
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < kRanks; ++rank) CHECK(errors[rank].empty(), errors[rank]);
  CHECK(counter_max.load() == 50 * kRanks, "highest counter seen " + std::to_string(counter_max.load()));

  // A get parked before the set completes when another client sets the key.
  auto waiter = connectClient(*server, 0);
  auto setter = connectClient(*server, 1);
  if (!waiter || !setter) return;
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK_OK(setter->set("late", "arrived"));
  });
  std::string value;
  auto start = std::chrono::steady_clock::now();
  CHECK_OK(waiter->get("late", &value, kTimeout));
  later.join();
  CHECK(value == "arrived", value);
  CHECK(secondsSince(start) >= 0.15, "get returned before the key was set");

  // One client shared by threads: calls are serialised, not interleaved on the wire.
  std::vector<std::thread> sharers;
  for (int t = 0; t < 4; ++t) {
    sharers.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        int64_t ignored = 0;
        CHECK_OK(waiter->add("shared-client", 1, &ignored));
        CHECK_OK(waiter->set("t" + std::to_string(t), std::to_string(i)));
      }
    });
  }
  for (auto& t : sharers) t.join();
  CHECK_OK(waiter->get("shared-client", &value, 1.0));
  CHECK(value == "100", value);
}

// ---- store: clients in forked processes ----

void testForkedProcesses() {
  auto server = startServer(5);
  constexpr int kChildren = 4;
  const int port = server->port();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < kChildren; ++rank) {
    std::fflush(stdout);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::alarm(30);  // a hung child must not outlive the test
      std::unique_ptr<StoreClient> client;
      Status st = StoreClient::connect("127.0.0.1", port, kSecret, 5, rank, kTimeout, &client);
      std::vector<std::string> all;
      if (st.ok()) st = allgather(*client, "pids", rank, kChildren, std::to_string(::getpid()),
                                  &all, kTimeout);
      int64_t ignored = 0;
      if (st.ok()) st = client->add("procs/arrived", 1, &ignored);
      if (st.ok()) st = barrier(*client, "procs/barrier", kChildren, kTimeout);
      if (st.ok()) st = client->wait({"pids/0", "pids/1", "pids/2", "pids/3"}, kTimeout);
      if (st.ok() && rank == 0) st = client->set("procs/summary", all[0] + "," + all[3]);
      if (!st.ok()) std::printf("  child rank %d: %s\n", rank, st.message().c_str());
      std::fflush(stdout);
      ::_exit(st.ok() ? 0 : 1);
    }
    CHECK(pid > 0, "fork failed");
    if (pid > 0) pids.push_back(pid);
  }
  Deadline deadline = Deadline::after(30);
  for (pid_t pid : pids) {
    int status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && !deadline.expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (done == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      CHECK(false, "child " + std::to_string(pid) + " hung and was killed");
      continue;
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "child " + std::to_string(pid) + " status " + std::to_string(status));
  }
  auto parent = connectClient(*server, 100, 5);
  if (!parent) return;
  std::string value;
  CHECK_OK(parent->get("procs/arrived", &value, 1.0));
  CHECK(value == std::to_string(kChildren), value);
  CHECK_OK(parent->get("procs/summary", &value, 1.0));
  CHECK(value == std::to_string(pids[0]) + "," + std::to_string(pids[3]), value);
}

// ---- store: connecting ----

int pickFreePort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

void testConnectRetriesUntilServerStarts() {
  const int port = pickFreePort();
  Status connected = Status::Internal("not run");
  std::unique_ptr<StoreClient> client;
  std::thread early([&] {
    connected = StoreClient::connect("127.0.0.1", port, kSecret, 1, 4, kTimeout, &client);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  std::unique_ptr<StoreServer> server;
  CHECK_OK(StoreServer::start("127.0.0.1", port, kSecret, 1, &server));
  early.join();
  CHECK(connected.ok(), connected.message());
  if (connected.ok()) CHECK_OK(client->set("k", "v"));

  // Nobody listening at all: a Timeout that names the address, within about the timeout.
  const int dead_port = pickFreePort();
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<StoreClient> none;
  Status st = StoreClient::connect("127.0.0.1", dead_port, kSecret, 1, 2, 0.3, &none);
  CHECK(st.code() == StatusCode::kTimeout, st.message());
  CHECK(contains(st.message(), std::to_string(dead_port)) && contains(st.message(), "rank 2"),
        st.message());
  CHECK(secondsSince(start) < 3.0, "connect timeout took too long");

  std::unique_ptr<StoreServer> bad;
  st = StoreServer::start("127.0.0.1", 0, "", 1, &bad);
  CHECK(st.code() == StatusCode::kInvalidArgument, "empty secret must be refused");
  st = StoreServer::start("127.0.0.1", port, kSecret, 1, &bad);
  CHECK(st.code() == StatusCode::kSystemError && contains(st.message(), "bind"),
        "second bind on a used port: " + st.message());
}

// ---- store: security ----

void testWrongSecretRefused() {
  auto server = startServer();
  StderrCapture capture;
  Status st;
  auto client = connectClient(*server, 6, 1, "not-the-job-secret", &st);
  CHECK(!client && st.code() == StatusCode::kPeerFailure, st.message());
  CHECK(contains(st.message(), "refused this process: job secret mismatch") &&
            contains(st.message(), "LIGHTCC_JOB_SECRET") &&
            contains(st.message(), "127.0.0.1:" + std::to_string(server->port())),
        st.message());
  CHECK(capture.waitFor("lightcc store: refused 127.0.0.1:"), capture.text());
  CHECK(contains(capture.text(), ": bad job secret (peer claims rank 6)"), capture.text());
  checkServerStillServes(*server, "wrong-secret");
}

void testStaleGenerationRefused() {
  auto server = startServer(2);
  StderrCapture capture;
  Status st;
  auto client = connectClient(*server, 1, 1, kSecret, &st);
  CHECK(!client && st.code() == StatusCode::kPeerFailure, st.message());
  CHECK(contains(st.message(), "stale generation") && !contains(st.message(), "secret mismatch"),
        st.message());
  CHECK(capture.waitFor("stale generation"), capture.text());
  CHECK(!contains(capture.text(), "bad job secret"), capture.text());
  // The same process at the current generation is welcome.
  auto current = connectClient(*server, 1, 2);
  CHECK(current != nullptr, "current generation refused");
}

// A fake server that issues a CHALLENGE but cannot prove the secret: the client must refuse it.
void testClientRefusesImpostorServer() {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::listen(listener.get(), 1);
  socklen_t len = sizeof(addr);
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  std::thread impostor([&] {
    UniqueFd conn(::accept(listener.get(), nullptr, nullptr));
    char hello[128];
    ::recv(conn.get(), hello, sizeof(hello), 0);
    Nonce nonce{};
    Proof fake{};
    std::string reply = FrameWriter(Opcode::kChallenge).raw(nonce.data(), nonce.size()).finish();
    ::send(conn.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
    char auth[128];
    ::recv(conn.get(), auth, sizeof(auth), 0);
    reply = FrameWriter(Opcode::kWelcome).raw(fake.data(), fake.size()).finish();
    ::send(conn.get(), reply.data(), reply.size(), MSG_NOSIGNAL);
    waitForClose(conn.get(), 5.0);
  });
  std::unique_ptr<StoreClient> client;
  Status st = StoreClient::connect("127.0.0.1", ntohs(addr.sin_port), kSecret, 1, 0, kTimeout,
                                   &client);
  impostor.join();
  CHECK(st.code() == StatusCode::kPeerFailure && contains(st.message(), "could not prove"),
        st.message());
}

// ---- store: robustness against broken peers ----

void testGarbageClients() {
  auto server = startServer();
  StderrCapture capture;
  {  // An HTTP request: its first four bytes read as a huge length.
    UniqueFd fd = rawConnect(server->port());
    rawSend(fd.get(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(waitForClose(fd.get(), 5.0), "server kept an HTTP client open");
  }
  CHECK(capture.waitFor("during the handshake"), capture.text());
  {  // A plausible length with random bytes inside.
    UniqueFd fd = rawConnect(server->port());
    std::string junk(64, '\0');
    CHECK_OK(generateNonce(&junk[0], junk.size()));
    junk[0] = 0;
    junk[1] = 0;
    junk[2] = 0;
    junk[3] = 60;
    rawSend(fd.get(), junk);
    CHECK(waitForClose(fd.get(), 5.0), "server kept a garbage client open");
  }
  {  // A HELLO with the wrong magic, and a HELLO cut short.
    UniqueFd fd = rawConnect(server->port());
    rawSend(fd.get(), FrameWriter(Opcode::kHello).raw("HTTP", 4).u16(1).finish());
    CHECK(waitForClose(fd.get(), 5.0), "bad magic kept open");
    UniqueFd fd2 = rawConnect(server->port());
    rawSend(fd2.get(), FrameWriter(Opcode::kHello).raw(kProtocolMagic, 4).u16(1).finish());
    CHECK(waitForClose(fd2.get(), 5.0), "short HELLO kept open");
  }
  CHECK(capture.waitFor("magic"), capture.text());
  CHECK(capture.waitFor("malformed HELLO"), capture.text());
  {  // A silent client must not stall anyone else; one that vanishes mid-frame is forgotten.
    UniqueFd silent = rawConnect(server->port());
    UniqueFd partial = rawConnect(server->port());
    rawSend(partial.get(), std::string("\0\0\0", 3));
    partial.reset();
    checkServerStillServes(*server, "silent-client");
  }
  {  // An authenticated client sending an unknown opcode, then one sending a request mid-GET.
    UniqueFd fd = rawConnect(server->port());
    CHECK(rawHandshake(fd.get(), 1), "raw handshake");
    rawSend(fd.get(), std::string("\0\0\0\1\x7f", 5));
    CHECK(waitForClose(fd.get(), 5.0), "unknown opcode kept open");
    UniqueFd fd2 = rawConnect(server->port());
    CHECK(rawHandshake(fd2.get(), 1), "raw handshake");
    rawSend(fd2.get(), FrameWriter(Opcode::kGet).str("nothing-here").u32(5000).finish() +
                           FrameWriter(Opcode::kSet).str("k").str("v").finish());
    CHECK(waitForClose(fd2.get(), 5.0), "pipelining during a parked GET kept open");
  }
  CHECK(capture.waitFor("opcode 0x7f"), capture.text());
  CHECK(capture.waitFor("still pending"), capture.text());
  checkServerStillServes(*server, "garbage");
}

void testOversizedFrames() {
  auto server = startServer();
  StderrCapture capture;
  {  // Before the handshake the limit is tiny.
    UniqueFd fd = rawConnect(server->port());
    rawSend(fd.get(), std::string("\0\0\x04\0", 4) + std::string(1024, 'x'));
    CHECK(waitForClose(fd.get(), 5.0), "oversized handshake frame kept open");
  }
  CHECK(capture.waitFor("frame of 1024 bytes exceeds the limit of " +
                        std::to_string(kMaxHandshakeFrameBytes)),
        capture.text());
  {  // After it, one byte over kMaxFrameBytes is refused from the header alone.
    UniqueFd fd = rawConnect(server->port());
    CHECK(rawHandshake(fd.get(), 1), "raw handshake");
    const uint32_t huge = static_cast<uint32_t>(kMaxFrameBytes + 1);
    std::string header(4, '\0');
    for (int i = 0; i < 4; ++i) header[i] = static_cast<char>(huge >> (24 - 8 * i));
    rawSend(fd.get(), header);
    CHECK(waitForClose(fd.get(), 5.0), "oversized frame kept open");
  }
  CHECK(capture.waitFor("(rank 99): frame of " + std::to_string(kMaxFrameBytes + 1) +
                        " bytes exceeds the limit"),
        capture.text());
  {  // A SET whose value length field exceeds kMaxValueBytes inside an allowed frame.
    UniqueFd fd = rawConnect(server->port());
    CHECK(rawHandshake(fd.get(), 1), "raw handshake");
    rawSend(fd.get(), FrameWriter(Opcode::kSet).str("k").u32(kMaxValueBytes + 1).finish());
    CHECK(waitForClose(fd.get(), 5.0), "bad value length kept open");
  }
  CHECK(capture.waitFor("malformed SET"), capture.text());
  checkServerStillServes(*server, "oversized");
}

// Destroying the server while a client is parked in GET ends that GET promptly.
void testServerShutdownWakesClients() {
  auto server = startServer();
  auto client = connectClient(*server, 0);
  if (!client) return;
  Status st;
  auto start = std::chrono::steady_clock::now();
  std::thread getter([&] {
    std::string value;
    st = client->get("never", &value, kTimeout);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server.reset();
  getter.join();
  CHECK(st.code() == StatusCode::kPeerFailure && contains(st.message(), "closed"), st.message());
  CHECK(secondsSince(start) < 3.0, "parked GET outlived the server");
  Status again = client->set("k", "v");
  CHECK(!again.ok() && contains(again.message(), "unusable"), again.message());
}

// ---- the collectives over a store handed in (as torch's is by the c10d backend) ----

// A Store in this process's memory: what the engine asks of a store handed in, nothing more.
class MemoryStore : public Store {
 public:
  Status set(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    table_[key] = value;
    cv_.notify_all();
    return Status::OK();
  }
  Status get(const std::string& key, std::string* value, double timeout_s) override {
    LIGHTCC_RETURN_IF_ERROR(wait({key}, timeout_s));
    std::lock_guard<std::mutex> lock(mu_);
    *value = table_[key];
    return Status::OK();
  }
  Status add(const std::string& key, int64_t delta, int64_t* result) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = table_.find(key);
    *result = (it == table_.end() ? 0 : std::stoll(it->second)) + delta;
    table_[key] = std::to_string(*result);
    cv_.notify_all();
    return Status::OK();
  }
  Status wait(const std::vector<std::string>& keys, double timeout_s) override {
    std::unique_lock<std::mutex> lock(mu_);
    const auto all = [&] {
      for (const auto& k : keys) {
        if (!table_.count(k)) return false;
      }
      return true;
    };
    if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), all)) {
      return Status::Timeout("memory store: a key is missing");
    }
    return Status::OK();
  }
  std::string where() const override { return "memory store"; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> table_;
};

void testCollectivesOverAnyStore() {
  MemoryStore store;
  const uint64_t servers = StoreServer::startedCount();
  constexpr int kRanks = 3;  // odd, so no pairing hides a rank
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      Store& s = store;
      std::vector<std::string> all;
      Status st = allgather(s, "hosts", rank, kRanks, "host-" + std::to_string(rank), &all, kTimeout);
      for (int r = 0; st.ok() && r < kRanks; ++r) {
        if (all[r] != "host-" + std::to_string(r)) {
          st = Status::Internal("allgather[" + std::to_string(r) + "]=" + all[r]);
        }
      }
      if (st.ok()) st = barrier(s, "met", kRanks, kTimeout);
      if (!st.ok()) errors[rank] = st.message();
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < kRanks; ++rank) CHECK(errors[rank].empty(), errors[rank]);
  // A barrier short of one rank times out naming how many came, over any store.
  Status st = barrier(store, "short", kRanks, 0.2);
  CHECK(st.code() == StatusCode::kTimeout && contains(st.message(), "1 of 3"), st.message());
  CHECK(StoreServer::startedCount() == servers, "meeting over a store handed in started a server");
  auto server = startServer();
  CHECK(StoreServer::startedCount() == servers + 1, "startedCount did not count a server");
  auto client = connectClient(*server, 0);
  CHECK(client != nullptr && contains(client->where(), "lightcc's store at 127.0.0.1:"),
        client ? client->where() : "no client");
}

}  // namespace

int main() {
  ::alarm(180);  // hard limit: SIGALRM ends a hung run with a failure
  ::signal(SIGPIPE, SIG_IGN);
  struct Test {
    const char* name;
    std::function<void()> run;
  };
  const Test tests[] = {
      {"sha256_vectors", testSha256Vectors},
      {"hmac_rfc4231", testHmacRfc4231},
      {"compare_and_nonce", testCompareAndNonce},
      {"wire_codec", testWireCodec},
      {"set_get_add_wait", testSetGetAddWait},
      {"get_and_wait_timeout", testGetAndWaitTimeout},
      {"threads", testThreads},
      {"forked_processes", testForkedProcesses},
      {"connect_retries_until_server_starts", testConnectRetriesUntilServerStarts},
      {"wrong_secret_refused", testWrongSecretRefused},
      {"stale_generation_refused", testStaleGenerationRefused},
      {"client_refuses_impostor_server", testClientRefusesImpostorServer},
      {"garbage_clients", testGarbageClients},
      {"oversized_frames", testOversizedFrames},
      {"server_shutdown_wakes_clients", testServerShutdownWakesClients},
      {"collectives_over_any_store", testCollectivesOverAnyStore},
  };
  int passed = 0;
  int failed = 0;
  for (const Test& test : tests) {
    const int before = g_failed_checks.load();
    auto start = std::chrono::steady_clock::now();
    test.run();
    const bool ok = g_failed_checks.load() == before;
    std::printf("%s %s (%.2f s)\n", ok ? "PASS" : "FAIL", test.name, secondsSince(start));
    std::fflush(stdout);
    (ok ? passed : failed) += 1;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
