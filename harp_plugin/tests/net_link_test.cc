// NetLink test: 3 processes on loopback open Links to each other through the HARP plugin and
// exchange messages that exercise splitting (parts of 64 KiB), empty messages, exact multiples,
// receive buffers larger than the message, and 32 requests in flight; data checked bytewise.
// Usage: harp_net_link_test --lib path/to/libnccl-net-harp.so
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "test_util.h"
#include "transport/net/net_link.h"

using lightcc::Link;
using lightcc::LinkRequest;
using lightcc::Status;
using namespace harp_test;

namespace {

constexpr int kRanks = 3;
constexpr size_t kPart = 64 << 10;

// Allgather through files in a private directory: write ours, poll for everyone's.
Status fileAllgather(const std::string& dir, int rank, const std::string& mine,
                     std::vector<std::string>* all) {
  std::string tmp = dir + "/h" + std::to_string(rank) + ".tmp";
  std::ofstream(tmp, std::ios::binary).write(mine.data(), static_cast<long>(mine.size()));
  rename(tmp.c_str(), (dir + "/h" + std::to_string(rank)).c_str());
  all->assign(kRanks, "");
  double end = nowS() + 10;
  for (int r = 0; r < kRanks; ++r) {
    for (;;) {
      std::ifstream f(dir + "/h" + std::to_string(r), std::ios::binary);
      if (f) {
        std::stringstream ss;
        ss << f.rdbuf();
        (*all)[static_cast<size_t>(r)] = ss.str();
        break;
      }
      if (nowS() > end) return Status::Timeout("allgather: no handle from rank " + std::to_string(r));
      usleep(1000);
    }
  }
  return Status::OK();
}

std::vector<size_t> sizes() {
  return {0, 1, 1000, kPart - 1, kPart, kPart + 1, 3 * kPart, 3 * kPart + 5, 10u << 20, 0, 77};
}

int runRank(const char* lib, const std::string& dir, int rank) {
  lightcc::net::NetPluginOptions opt;
  opt.path = lib;
  opt.job_secret = "net-link-test-secret";
  std::unique_ptr<lightcc::net::NetPlugin> plugin;
  Status st = lightcc::net::NetPlugin::load(opt, &plugin);
  HT_CHECK(st.ok(), "load: %s", st.message().c_str());
  plugin->setMaxMessageBytes(kPart);
  std::vector<int> peers;
  for (int r = 0; r < kRanks; ++r) if (r != rank) peers.push_back(r);
  std::vector<std::unique_ptr<Link>> links;
  st = lightcc::net::connectNetLinks(
      *plugin, rank, peers,
      [&](const std::string& h, std::vector<std::string>* all) { return fileAllgather(dir, rank, h, all); },
      20, &links);
  HT_CHECK(st.ok(), "connectNetLinks: %s", st.message().c_str());
  HT_CHECK(links.size() == peers.size(), "links");
  struct Op {
    Link* link;
    bool send;
    size_t msg;
    std::vector<uint8_t> buf;
    LinkRequest* req = nullptr;
    bool done = false;
  };
  std::vector<Op> ops;
  std::vector<size_t> sz = sizes();
  for (size_t li = 0; li < links.size(); ++li) {
    HT_CHECK(links[li]->peer() == peers[li] && links[li]->kind() == "net:HARP", "link identity");
    for (size_t m = 0; m < sz.size(); ++m) {
      Op s{links[li].get(), true, m, std::vector<uint8_t>(sz[m])};
      fillPattern(s.buf.data(), sz[m], static_cast<uint64_t>(rank * 100 + peers[li]), m);
      ops.push_back(std::move(s));
      Op r{links[li].get(), false, m, std::vector<uint8_t>(sz[m] + (m % 2 ? 4096 : 0), 0xEE)};
      ops.push_back(std::move(r));
    }
  }
  double end = nowS() + 30;
  size_t finished = 0;
  while (finished < ops.size()) {
    HT_CHECK(nowS() < end, "rank %d: %zu/%zu ops finished", rank, finished, ops.size());
    for (Op& op : ops) {
      if (op.done) continue;
      if (op.req == nullptr) {
        st = op.send ? op.link->isend(op.buf.data(), sz[op.msg], &op.req)
                     : op.link->irecv(op.buf.data(), op.buf.size(), &op.req);
        HT_CHECK(st.ok(), "post: %s", st.message().c_str());
        if (op.req == nullptr) break;  // link at its in-flight limit: keep posting order
        continue;
      }
      bool done = false;
      size_t got = 0;
      st = op.link->test(op.req, &done, &got);
      HT_CHECK(st.ok(), "test: %s", st.message().c_str());
      if (!done) continue;
      op.done = true;
      ++finished;
      HT_CHECK(got == sz[op.msg], "rank %d msg %zu: %zu bytes, expected %zu", rank, op.msg, got, sz[op.msg]);
      if (!op.send) {
        long long bad = checkPattern(op.buf.data(), got, static_cast<uint64_t>(op.link->peer() * 100 + rank), op.msg);
        HT_CHECK(bad < 0, "rank %d from %d msg %zu: wrong byte at %lld", rank, op.link->peer(), op.msg, bad);
      }
    }
  }
  links.clear();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* lib = nullptr;
  for (int i = 1; i + 1 < argc; ++i) if (std::string(argv[i]) == "--lib") lib = argv[i + 1];
  if (lib == nullptr) {
    fprintf(stderr, "usage: %s --lib libnccl-net-harp.so\n", argv[0]);
    return 2;
  }
  char tmpl[] = "/tmp/harp_netlink_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  setenv("HARP_IFNAME", "lo", 1);
  std::vector<pid_t> pids;
  for (int r = 0; r < kRanks; ++r) pids.push_back(spawn([&, r] { return runRank(lib, dir, r); }, 60));
  int failed = 0;
  for (pid_t p : pids) failed += waitFor(p, 60) != 0;
  for (int r = 0; r < kRanks; ++r) unlink((dir + "/h" + std::to_string(r)).c_str());
  rmdir(dir.c_str());
  printf("net_link: %d passed, %d failed\n", kRanks - failed, failed);
  return failed == 0 ? 0 : 1;
}
