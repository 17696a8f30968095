// Tests Negotiator::negotiate with ranks as threads over in-memory links (fake_link.h), as gloo
// tests its algorithms: the uncached slow path through rank 0's coordinator, the cached fast path,
// mismatches (uncached and against the cache) and one rank's own rejection becoming the same
// error on every rank, a process set added by its members only while the other ranks submit
// nothing, and the shutdown votes — at 2 to 8 thread-ranks spread over "hosts" of
// several shapes (one host, a host per rank, uneven hosts, odd host counts), since the host
// layout shapes the negotiation tree (negotiation_tree.h). The tree itself and BitExchange are
// tested too: the AND is right, a single rank starting a cycle wakes every idle rank, and no rank
// sends more than its stage budget (log p, not p) of messages.
//
// Every wait has the host group's timeout (a hang fails the test). Each rank's shared-memory
// area is unlinked as soon as it is made, so nothing is left in /dev/shm whatever happens.
// tests/single/test_cpp_units.py builds it against lightcc_core and runs it.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "engine/bit_exchange.h"
#include "engine/negotiation_tree.h"
#include "engine/negotiator.h"
#include "engine/process_sets.h"
#include "fake_link.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// What one cycle agreed, as one rank saw it; every rank must see the same.
struct CycleSeen {
  Status status;
  bool slow = false, stop = false, shutdown_pending = false;
  size_t cached = 0;
  std::vector<std::string> names;   // agreed tensors, in execution order
  std::vector<std::string> errors;  // parallel to names ("" when the op may run)
  bool handles_failed = true;       // every local handle of an error response completed with an error

  bool operator==(const CycleSeen& o) const {
    return status.ok() == o.status.ok() && slow == o.slow && stop == o.stop &&
           shutdown_pending == o.shutdown_pending && cached == o.cached && names == o.names && errors == o.errors;
  }
};

// One thread-rank: what an engine gives its negotiator, and a negotiator over fake links.
struct Rank {
  Config config;
  Topology topo;
  Channel channel;
  TensorQueue queue{[] {}};
  Timeline timeline;
  EngineStats stats;
  std::unique_ptr<Negotiator> negotiator;
  std::vector<CycleSeen> seen;

  Rank(int rank, int size, testing::FakeFabric& fabric, const std::vector<int>& host_of) {
    topo.rank = rank;
    topo.size = size;
    topo.host_index = host_of;
    topo.cross_rank = rank;
    topo.cross_size = size;
    channel.host = testing::makeThreadHost("negtest", rank);
    fabric.setReader(rank, channel.host.get());
    SetComm world;
    world.ranks.resize(static_cast<size_t>(size));
    world.local_index.assign(static_cast<size_t>(size), -1);
    world.me = rank;
    world.local_index[static_cast<size_t>(rank)] = 0;
    world.host = channel.host.get();
    channel.world_links.assign(static_cast<size_t>(size), nullptr);
    for (int r = 0; r < size; ++r) {
      world.ranks[static_cast<size_t>(r)] = r;
      if (r == rank) continue;
      channel.owned_links.push_back(fabric.link(rank, r));
      channel.world_links[static_cast<size_t>(r)] = channel.owned_links.back().get();
    }
    world.links = channel.world_links;
    channel.comms.emplace(0, std::move(world));
    negotiator = std::make_unique<Negotiator>(config, topo, channel, queue, timeline, stats);
  }

  bool pushed_all = true;  // every submit() was queued

  void submit(const std::string& name, std::vector<int64_t> shape, OpType op = OpType::kAllreduce,
              const std::string& rejected = "") {
    TensorEntry e;
    e.request.op = op;
    e.request.name = name;
    e.request.shape = std::move(shape);
    e.request.error = rejected;
    push(std::move(e));
  }

  // A process set of `members` that only they submit (process_sets.h, kMembersOnlySetId).
  void submitMembersOnlyAdd(const std::string& name, std::vector<int64_t> members) {
    TensorEntry e;
    e.request.op = OpType::kAddProcessSet;
    e.request.name = name;
    e.request.process_set_id = kMembersOnlySetId;
    e.request.aux = std::move(members);
    push(std::move(e));
  }

  void push(TensorEntry e) {
    e.request.rank = topo.rank;
    e.handle = std::make_shared<Handle>();
    handles.push_back(e.handle);
    std::vector<TensorEntry> entries;
    entries.push_back(std::move(e));
    if (!queue.push(std::move(entries), false).ok()) pushed_all = false;
  }

  std::vector<std::shared_ptr<Handle>> handles;  // every submission's, in order

  // One cycle as the engine runs it: negotiate, take and complete every agreed tensor, finish.
  void cycle(const Negotiator::Votes& votes = {}) {
    Negotiator::Plan plan;
    CycleSeen s;
    s.status = negotiator->negotiate(votes, &plan);
    s.slow = plan.slow;
    s.stop = plan.stop;
    s.shutdown_pending = plan.shutdown_pending;
    s.cached = plan.cached;
    if (s.status.ok() && !plan.stop) {
      for (const ResponsePtr& r : plan.responses) {
        s.names.push_back(r->names.front());
        s.errors.push_back(r->error);
        Batch b = negotiator->take(r);
        for (size_t i = 0; i < b.entries.size(); ++i) {
          if (!b.entries[i].handle) continue;
          std::shared_ptr<Handle> h = b.entries[i].handle;
          const Status st = r->isError() ? Status::Mismatch(r->error) : Status::OK();
          queue.finish(r->process_set_id, r->names[i]);
          h->complete(st);
          if (r->isError() && h->wait().ok()) s.handles_failed = false;
        }
      }
      const Status fin = negotiator->finishCycle();
      if (!fin.ok()) s.status = fin;
    }
    seen.push_back(std::move(s));
  }
};

// The host layout every multi-rank test runs under (host index per rank; empty: a host per rank).
std::vector<int> g_hosts;

// Runs body(rank) on `size` threads, one Rank each; returns the ranks once all threads have ended.
std::vector<std::unique_ptr<Rank>> runRanks(int size, const std::function<void(Rank&)>& body) {
  testing::FakeFabric fabric(size);
  std::vector<std::unique_ptr<Rank>> ranks;
  for (int r = 0; r < size; ++r) ranks.push_back(std::make_unique<Rank>(r, size, fabric, g_hosts));
  std::vector<std::thread> threads;
  for (auto& rank : ranks) {
    Rank* me = rank.get();
    threads.emplace_back([me, &body] {
      Status st = me->negotiator->start();
      if (st.ok()) body(*me);
    });
  }
  for (auto& t : threads) t.join();
  return ranks;
}

// Every rank saw the same cycles, all without a link error; returns rank 0's.
std::vector<CycleSeen> agreed(const std::vector<std::unique_ptr<Rank>>& ranks, const std::string& what) {
  bool same = true, ok = true;
  for (const auto& r : ranks) {
    same = same && r->seen == ranks.front()->seen;
    ok = ok && r->pushed_all;
    for (const auto& c : r->seen) ok = ok && c.status.ok() && c.handles_failed;
  }
  check(same, what + ": every rank agreed the same plans");
  check(ok, what + ": no negotiation error, failed tensors failed locally too");
  return ranks.front()->seen;
}

void testFastAndSlowPaths(int n) {
  const std::string at = " at " + std::to_string(n) + " ranks";
  auto ranks = runRanks(n, [](Rank& r) {
    r.cycle();  // nothing queued anywhere
    for (int step = 0; step < 3; ++step) {
      r.submit("grad", {4});
      r.cycle();
    }
  });
  const auto seen = agreed(ranks, "fast/slow" + at);
  if (seen.size() != 4) return check(false, "fast/slow" + at + ": four cycles ran");
  check(seen[0].names.empty() && !seen[0].slow, "an idle cycle agrees nothing, without the coordinator" + at);
  check(seen[1].slow && seen[1].cached == 0 && seen[1].names == std::vector<std::string>{"grad"} &&
            seen[1].errors[0].empty(),
        "a new tensor goes through the coordinator" + at);
  for (int i = 2; i < 4; ++i) {
    check(!seen[i].slow && seen[i].cached == 1 && seen[i].names == std::vector<std::string>{"grad"},
          "the repeated tensor takes the cached fast path (step " + std::to_string(i) + ")" + at);
  }
}

void testMismatches(int n) {
  const std::string at = " at " + std::to_string(n) + " ranks";
  auto ranks = runRanks(n, [n](Rank& r) {
    const int last = n - 1;
    r.submit("grad", {4});
    r.cycle();
    r.submit("grad", {r.topo.rank == last ? 5 : 4});  // disagrees with the cached entry
    r.cycle();
    r.submit("fresh", {2, r.topo.rank + 1});  // never cached, shapes differ
    r.cycle();
    r.submit("kind", {4}, r.topo.rank == 0 ? OpType::kAllreduce : OpType::kBroadcast);
    r.cycle();
    r.submit("rejected", {4}, OpType::kAllreduce, r.topo.rank == last ? "splits do not sum to 4" : "");
    r.cycle();
  });
  const auto seen = agreed(ranks, "mismatches" + at);
  if (seen.size() != 5) return check(false, "mismatches" + at + ": five cycles ran");
  check(seen[0].errors == std::vector<std::string>{""}, "the first step runs" + at);
  auto failedWith = [&](const CycleSeen& c, const std::string& text) {
    return c.slow && c.errors.size() == 1 && contains(c.errors[0], text);
  };
  check(failedWith(seen[1], "Mismatched shapes"), "a disagreement with the cache fails on every rank" + at);
  check(failedWith(seen[2], "Mismatched shapes"), "an uncached shape mismatch fails on every rank" + at);
  check(failedWith(seen[3], "Mismatched operations") && contains(seen[3].errors[0], "allreduce"),
        "an op mismatch fails on every rank, naming the ops" + at);
  const std::string who = "rank " + std::to_string(n - 1) + " rejected tensor 'rejected'";
  check(failedWith(seen[4], who) && contains(seen[4].errors[0], "splits do not sum to 4"),
        "one rank's own rejection fails the tensor on every rank, with its reason" + at);
}

// Ranks 0 and n-1 add a set in different cycles; the others submit nothing. Every rank joins
// the same cycles and sees the same agreed add; the members' handles complete, nothing is left.
void testMembersOnlyAdd(int n) {
  const std::string at = " at " + std::to_string(n) + " ranks";
  const int last = n - 1;
  auto ranks = runRanks(n, [last](Rank& r) {
    if (r.topo.rank == 0) r.submitMembersOnlyAdd("pair", {0, last});
    r.cycle();
    if (r.topo.rank == last) r.submitMembersOnlyAdd("pair", {0, last});
    r.cycle();
    r.cycle();
  });
  const auto seen = agreed(ranks, "member-only add" + at);
  if (seen.size() != 3) return check(false, "member-only add" + at + ": three cycles ran");
  check(seen[0].slow && seen[0].names.empty(), "one member's add goes to the coordinator and waits" + at);
  check(seen[1].slow && seen[1].names == std::vector<std::string>{"pair"} && seen[1].errors[0].empty(),
        "the second member's add completes it, agreed on every rank" + at);
  check(!seen[2].slow && seen[2].names.empty(), "nothing is left to negotiate" + at);
  bool done = true;
  for (const auto& r : ranks) {
    done = done && !r->negotiator->anyWork();
    for (const auto& h : r->handles) done = done && h->done();
  }
  check(done, "the members' handles completed, no rank holds work" + at);
}

void testShutdownVotes(int n) {
  const std::string at = " at " + std::to_string(n) + " ranks";
  auto ranks = runRanks(n, [](Rank& r) {
    Negotiator::Votes one;
    one.asked_shutdown = r.topo.rank == 0;
    r.cycle(one);  // one rank asked: everyone learns, nobody stops yet
    Negotiator::Votes all;
    all.asked_shutdown = true;
    r.cycle(all);
  });
  const auto seen = agreed(ranks, "shutdown" + at);
  if (seen.size() != 2) return check(false, "shutdown" + at + ": two cycles ran");
  check(!seen[0].stop && seen[0].shutdown_pending, "one rank's request is pending everywhere" + at);
  check(seen[1].stop, "all ranks asked: every rank stops in the same cycle" + at);

  auto forced = runRanks(n, [n](Rank& r) {
    Negotiator::Votes v;
    v.asked_shutdown = r.topo.rank == n - 1;
    v.force_shutdown = r.topo.rank == n - 1;  // its grace ran out
    r.submit("left", {4});
    r.cycle(v);
  });
  const auto f = agreed(forced, "forced shutdown" + at);
  check(f.size() == 1 && f[0].stop, "one rank's expired grace stops every rank" + at);
}

// Shapes of n ranks over hosts: host index per rank.
std::vector<std::vector<int>> shapesOf(int n) {
  std::vector<std::vector<int>> shapes;
  shapes.push_back(std::vector<int>(static_cast<size_t>(n), 0));  // one host
  std::vector<int> own, pairs, uneven;
  for (int r = 0; r < n; ++r) {
    own.push_back(r);         // a host per rank
    pairs.push_back(r / 2);   // two per host (the last alone when n is odd)
    uneven.push_back(r < 3 ? 0 : 1 + (r - 3) % 2);  // 3 on host 0, the rest dealt round-robin
  }
  shapes.push_back(own);
  if (n > 2) shapes.push_back(pairs);
  if (n > 3) shapes.push_back(uneven);
  return shapes;
}

std::string shapeName(const std::vector<int>& hosts) {
  std::string s = "[";
  for (size_t i = 0; i < hosts.size(); ++i) s += (i ? "," : "") + std::to_string(hosts[i]);
  return s + "]";
}

// The tree's shape: every rank's stage peers are symmetric, the slow-path tree spans every rank
// once with rank 0 at its root, and a rank's doubling rounds stay within ceil(log2 hosts).
void testTreeShape(const std::vector<int>& hosts) {
  const int n = static_cast<int>(hosts.size());
  const std::string at = " for hosts " + shapeName(hosts);
  std::vector<NegotiationTree> t;
  for (int r = 0; r < n; ++r) t.push_back(NegotiationTree::build(r, n, hosts));
  bool symmetric = true, bounded = true, spans = true;
  std::vector<int> parents_seen(static_cast<size_t>(n), 0);
  for (int r = 0; r < n; ++r) {
    for (int peer : t[r].cyclePeers()) {
      const auto theirs = t[peer].cyclePeers();
      symmetric = symmetric && std::find(theirs.begin(), theirs.end(), r) != theirs.end();
    }
    int log_h = 0;
    while ((1 << log_h) < t[r].hosts) ++log_h;
    bounded = bounded && static_cast<int>(t[r].rounds.size()) <= log_h;
    for (int c : t[r].children) {
      ++parents_seen[static_cast<size_t>(c)];
      spans = spans && t[c].parent == r;
    }
  }
  for (int r = 0; r < n; ++r) spans = spans && parents_seen[static_cast<size_t>(r)] == (r == 0 ? 0 : 1);
  check(symmetric, "every cycle peer of a rank has that rank as a cycle peer" + at);
  check(bounded, "leaders double in at most ceil(log2 hosts) rounds" + at);
  check(spans && t[0].parent == -1, "the slow-path tree reaches every rank once, from rank 0" + at);
  // Subtrees: rank 0 vouches for everyone through its children, no child for a rank outside.
  bool vouched = true;
  for (int r = 1; r < n; ++r) {
    int covering = 0;
    for (int c : t[0].children) covering += t[0].inSubtree(c, r) ? 1 : 0;
    vouched = vouched && covering == 1;
  }
  check(vouched, "each rank lies below exactly one of rank 0's children" + at);
}

// BitExchange alone: one rank starts the cycle, the others sit idle until incoming() says a
// peer has started; every rank must end with the AND of all vectors, and send no more messages
// than its stages need.
void testExchange(const std::vector<int>& hosts, int starter) {
  const int n = static_cast<int>(hosts.size());
  const std::string at = " for hosts " + shapeName(hosts) + ", rank " + std::to_string(starter) + " starting";
  testing::FakeFabric fabric(n);
  std::vector<std::unique_ptr<Rank>> ranks;
  std::vector<NegotiationTree> trees;
  for (int r = 0; r < n; ++r) {
    ranks.push_back(std::make_unique<Rank>(r, n, fabric, hosts));
    trees.push_back(NegotiationTree::build(r, n, hosts));
  }
  const size_t words = 3;
  std::vector<std::vector<uint64_t>> result(static_cast<size_t>(n));
  std::vector<Status> status(static_cast<size_t>(n));
  std::vector<size_t> sends(static_cast<size_t>(n), 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      BitExchange ex(trees[static_cast<size_t>(r)], ranks[static_cast<size_t>(r)]->channel);
      Status st = ex.post(words);
      // Each rank clears its own bit in word 0 and one bit per rank in word 1; word 2 stays all ones.
      std::vector<uint64_t> bits = {~(uint64_t{1} << r), ~uint64_t{0} ^ (uint64_t{1} << (r % 7)), ~uint64_t{0}};
      if (st.ok() && r != starter) {
        st = ranks[static_cast<size_t>(r)]->channel.host->waitUntil([&] { return ex.incoming(); }, "idle", true);
      }
      if (st.ok()) st = ex.allreduce(&bits, "test exchange");
      if (st.ok()) st = ex.post(words);  // the next cycle's receives, as finishCycle posts them
      status[static_cast<size_t>(r)] = st;
      result[static_cast<size_t>(r)] = bits;
      sends[static_cast<size_t>(r)] = ex.lastSends();
    });
  }
  for (auto& th : threads) th.join();
  uint64_t w0 = ~uint64_t{0}, w1 = ~uint64_t{0};
  for (int r = 0; r < n; ++r) {
    w0 &= ~(uint64_t{1} << r);
    w1 &= ~uint64_t{0} ^ (uint64_t{1} << (r % 7));
  }
  bool ok = true, right = true, budget = true;
  for (int r = 0; r < n; ++r) {
    ok = ok && status[static_cast<size_t>(r)].ok();
    right = right && result[static_cast<size_t>(r)] == std::vector<uint64_t>{w0, w1, ~uint64_t{0}};
    const NegotiationTree& t = trees[static_cast<size_t>(r)];
    // Host peers, then (leaders) fold + rounds + results to the host and the folded leader.
    size_t most = t.host_peers.size();
    if (t.isLeader() && t.hosts > 1) most += t.rounds.size() + 2 + t.host_peers.size();
    budget = budget && sends[static_cast<size_t>(r)] <= most;
  }
  check(ok, "every rank woke and finished the exchange" + at);
  check(right, "every rank holds the AND of all vectors" + at);
  check(budget, "no rank sent more than its stages' messages" + at);
}

}  // namespace

int main() {
  for (int n = 2; n <= 8; ++n) {
    for (const auto& hosts : shapesOf(n)) {
      testTreeShape(hosts);
      for (int starter : {0, n / 2, n - 1}) testExchange(hosts, starter);
      g_hosts = hosts;
      if (n > 5 && hosts != shapesOf(n)[2]) continue;  // the full suite at 2-5, one shape above
      testFastAndSlowPaths(n);
      testMismatches(n);
      testMembersOnlyAdd(n);
      testShutdownVotes(n);
    }
  }
  // A message count that grows as log p: a leader of 16 hosts sends 4 rounds + its host's share.
  std::vector<int> big;
  for (int r = 0; r < 64; ++r) big.push_back(r / 4);
  const NegotiationTree leader = NegotiationTree::build(4, 64, big);
  check(leader.rounds.size() == 4 && leader.host_peers.size() == 3 && leader.cyclePeers().size() == 7,
        "at 16 hosts x 4 a leader talks to 3 host peers and 4 doubling partners, not 63 ranks");
  return testing::summary();
}
