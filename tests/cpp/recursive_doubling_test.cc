// Tests recursiveDoublingAllreduce with ranks as threads over in-memory links (fake_link.h): exact
// integer sums and bit-identical float results on every rank at 1-9 ranks (powers of two and
// the fold-in sizes between), every reduce op, pre/postscale, an empty buffer, a broken link
// failing with the peer named; and the peer probe's address decoding and answers
// (listening, refused). tests/single/test_cpp_units.py builds it against lightcc_core and runs it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/collectives.h"
#include "check.h"
#include "fake_link.h"
#include "transport/net/peer_probe.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

// p thread-ranks, each with its host group, links and a one-member-per-rank SetComm.
struct World {
  testing::FakeFabric fabric;
  std::vector<std::unique_ptr<shm::HostGroup>> hosts;
  std::vector<std::vector<std::unique_ptr<Link>>> links;
  std::vector<SetComm> comms;

  explicit World(int p) : fabric(p), hosts(p), links(p), comms(p) {
    for (int r = 0; r < p; ++r) {
      hosts[r] = testing::makeThreadHost("rdtest", r);
      fabric.setReader(r, hosts[r].get());
      SetComm& c = comms[r];
      c.me = r;
      c.host = hosts[r].get();
      c.local_index.assign(p, -1);
      c.local_index[r] = 0;
      c.links.assign(p, nullptr);
      for (int m = 0; m < p; ++m) {
        c.ranks.push_back(m);
        if (m == r) continue;
        links[r].push_back(fabric.link(r, m));
        links[r].back()->setPeerHost("node" + std::to_string(m));
        c.links[m] = links[r].back().get();
      }
    }
  }
};

// Runs the allreduce on every thread-rank; bufs[r] in, out in place; statuses per rank.
template <typename T>
std::vector<Status> runAll(World& w, std::vector<std::vector<T>>& bufs, const ReduceSpec& spec) {
  const int p = static_cast<int>(bufs.size());
  std::vector<Status> st(p);
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) {
    threads.emplace_back([&, r] { st[r] = recursiveDoublingAllreduce(w.comms[r], bufs[r].data(), bufs[r].size(), spec); });
  }
  for (auto& t : threads) t.join();
  return st;
}

void testIntegerSums(int p) {
  World w(p);
  const size_t n = 1000;
  std::vector<std::vector<int32_t>> bufs(p, std::vector<int32_t>(n));
  for (int r = 0; r < p; ++r) {
    for (size_t i = 0; i < n; ++i) bufs[r][i] = static_cast<int32_t>((r + 1) * 1000 + i);
  }
  auto st = runAll(w, bufs, ReduceSpec{DataType::kInt32, ReduceOp::kSum, 1.0, 1.0});
  bool ok = true, exact = true;
  for (int r = 0; r < p; ++r) {
    ok = ok && st[r].ok();
    for (size_t i = 0; i < n; ++i) {
      exact = exact && bufs[r][i] == static_cast<int32_t>(1000 * p * (p + 1) / 2 + p * i);
    }
  }
  check(ok, "int32 sum at " + std::to_string(p) + " ranks: no error");
  check(exact, "int32 sum at " + std::to_string(p) + " ranks: exact on every rank");
}

void testFloatsIdentical(int p, ReduceOp op, double pre, double post) {
  World w(p);
  const size_t n = 777;
  std::vector<std::vector<float>> bufs(p, std::vector<float>(n));
  for (int r = 0; r < p; ++r) {
    for (size_t i = 0; i < n; ++i) bufs[r][i] = std::sin(0.37f * (r + 1) * (i + 3)) * 1.1f + 0.01f * r;
  }
  std::vector<float> want(n);
  for (size_t i = 0; i < n; ++i) {
    double acc = op == ReduceOp::kProduct ? 1.0 : op == ReduceOp::kMin ? 1e30 : op == ReduceOp::kMax ? -1e30 : 0.0;
    for (int r = 0; r < p; ++r) {
      const double v = bufs[r][i] * pre;
      acc = op == ReduceOp::kSum ? acc + v : op == ReduceOp::kProduct ? acc * v
            : op == ReduceOp::kMin ? std::min(acc, v) : std::max(acc, v);
    }
    want[i] = static_cast<float>(acc * post);
  }
  auto st = runAll(w, bufs, ReduceSpec{DataType::kFloat32, op, pre, post});
  bool ok = true, same = true, close = true;
  for (int r = 0; r < p; ++r) {
    ok = ok && st[r].ok();
    same = same && std::memcmp(bufs[r].data(), bufs[0].data(), n * sizeof(float)) == 0;
    for (size_t i = 0; i < n; ++i) close = close && std::fabs(bufs[r][i] - want[i]) <= 1e-4f * (1 + std::fabs(want[i]));
  }
  const std::string at = " (op " + std::to_string(static_cast<int>(op)) + ", " + std::to_string(p) + " ranks)";
  check(ok, "float allreduce: no error" + at);
  check(same, "float allreduce: every rank holds the same bits" + at);
  check(close, "float allreduce: the reduction, scaled" + at);
}

void testEmpty() {
  World w(3);
  std::vector<std::vector<float>> bufs(3);
  auto st = runAll(w, bufs, ReduceSpec{DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0});
  check(st[0].ok() && st[1].ok() && st[2].ok(), "an empty allreduce at 3 ranks completes");
}

void testBrokenPeerIsNamed() {
  World w(4);
  w.fabric.mailbox(3, 2)->broken = true;  // rank 3's messages to rank 2 fail
  w.fabric.mailbox(2, 3)->broken = true;
  std::vector<std::vector<float>> bufs(4, std::vector<float>(16, 1.0f));
  // Ranks 0 and 1 would wait for the broken pair until the timeout: run only the pair.
  Status st2, st3;
  std::thread a([&] { st2 = recursiveDoublingAllreduce(w.comms[2], bufs[2].data(), 16, {DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0}); });
  std::thread b([&] { st3 = recursiveDoublingAllreduce(w.comms[3], bufs[3].data(), 16, {DataType::kFloat32, ReduceOp::kSum, 1.0, 1.0}); });
  a.join();
  b.join();
  check(st2.code() == StatusCode::kPeerFailure && st2.message().find("rank 3 (host node3, fake)") != std::string::npos,
        "a broken link fails with the peer, its host and its kind named: " + st2.message());
  check(st3.code() == StatusCode::kPeerFailure && st3.message().find("rank 2 (host node2, fake)") != std::string::npos,
        "and on the other end too: " + st3.message());
}

void testProbe() {
  // A HARP handle: magic, version, reserved, listen id, then the sockaddr.
  std::string handle(128, '\0');
  const uint32_t magic = 0x4c444848;
  std::memcpy(&handle[0], &magic, 4);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(40123);
  inet_pton(AF_INET, "10.1.2.3", &a.sin_addr);
  std::memcpy(&handle[16], &a, sizeof(a));
  check(net::handleAddress(handle) == "10.1.2.3:40123", "a HARP handle's address: " + net::handleAddress(handle));
  check(net::handleAddress(std::string(128, 'x')).empty(), "another plugin's handle has no address");

  const int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in l{};
  l.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &l.sin_addr);
  socklen_t len = sizeof(l);
  const bool bound = bind(lfd, reinterpret_cast<sockaddr*>(&l), sizeof(l)) == 0 && listen(lfd, 8) == 0 &&
                     getsockname(lfd, reinterpret_cast<sockaddr*>(&l), &len) == 0;
  check(bound, "a listening socket for the probe");
  const std::string live = "127.0.0.1:" + std::to_string(ntohs(l.sin_port));
  // A port nobody listens on: bind one, note it, close it.
  const int cfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in c{};
  c.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &c.sin_addr);
  len = sizeof(c);
  bind(cfd, reinterpret_cast<sockaddr*>(&c), sizeof(c));
  getsockname(cfd, reinterpret_cast<sockaddr*>(&c), &len);
  close(cfd);
  const std::string dead = "127.0.0.1:" + std::to_string(ntohs(c.sin_port));
  auto answers = net::probeAddresses({live, dead, "not an address"}, 1.0);
  check(answers.size() == 3 && answers[0] == net::PeerAnswer::kAnswers, "a listening rank answers");
  check(answers.size() == 3 && answers[1] == net::PeerAnswer::kRefuses, "a closed listen port refuses");
  check(answers.size() == 3 && answers[2] == net::PeerAnswer::kUnknown, "an unreadable address is not probed");
  close(lfd);
}

}  // namespace

int main() {
  for (int p = 1; p <= 9; ++p) testIntegerSums(p);
  for (int p : {2, 3, 5, 6, 8}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      testFloatsIdentical(p, op, 1.0, 1.0);
    }
    testFloatsIdentical(p, ReduceOp::kSum, 0.5, 1.0 / p);
  }
  testEmpty();
  testBrokenPeerIsNamed();
  testProbe();
  return testing::summary();
}
