// Tests negotiation's pure parts: the wire format, the tensor table, the response cache and the
// coordinator (readiness, cross-rank validation, one rank's own rejection, join, stalls, and
// member-only process-set changes, which wait for their own ranks only).
//
// Pure (no sockets, well under a second). tests/single/test_cpp_units.py builds it with CMake
// (-DLIGHTCC_BUILD_TESTS=ON) against lightcc_core and runs it.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "engine/coordinator.h"
#include "engine/message.h"
#include "engine/process_sets.h"
#include "engine/response_cache.h"
#include "engine/tensor_table.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Request request(int rank, const std::string& name, std::vector<int64_t> shape = {4},
                DataType dtype = DataType::kFloat32, OpType op = OpType::kAllreduce) {
  Request r;
  r.rank = rank;
  r.op = op;
  r.dtype = dtype;
  r.name = name;
  r.shape = std::move(shape);
  return r;
}

void testWireRoundTrip() {
  Request a = request(3, "grad.fc1", {2, 5}, DataType::kFloat16);
  a.reduce_op = ReduceOp::kMax;
  a.prescale = 0.5;
  a.aux = {1, -2, 3};
  a.error = "alltoall splits sum to 3 but the first dimension is 4";
  std::vector<Request> got;
  check(parseRequests(serializeRequests({a, request(1, "b")}), 3, &got).ok(), "requests parse");
  check(got.size() == 2 && got[0].sameSignature(a) && got[0].rank == 3 && got[0].error == a.error &&
            got[1].error.empty(),
        "requests round-trip, the rejection text included");
  Response r;
  r.op = OpType::kAllgather;
  r.names = {"x", "y"};
  r.shapes = {{1, 2}, {3}};
  r.first_dims = {1, 2, 3, 4};
  r.error = "Mismatched shapes";
  r.last_joined = 2;
  std::vector<Response> back;
  check(parseResponses(serializeResponses({r}), 0, &back).ok(), "responses parse");
  check(back.size() == 1 && back[0].names == r.names && back[0].shapes == r.shapes &&
            back[0].first_dims == r.first_dims && back[0].error == r.error && back[0].last_joined == 2,
        "responses round-trip");
}

void testWireRejectsMalformed() {
  const std::string good = serializeRequests({request(1, "grad")});
  std::vector<Request> out;
  bool all_cut_fail = true;
  for (size_t n = 0; n < good.size(); ++n) {
    Status st = parseRequests(good.substr(0, n), 7, &out);
    if (st.ok()) all_cut_fail = false;
  }
  check(all_cut_fail, "every truncation of a request list is an error");
  Status st = parseRequests(good.substr(0, good.size() - 1), 7, &out);
  check(st.code() == StatusCode::kPeerFailure && contains(st.message(), "rank 7"), "the error names the sender: " +
                                                                                     st.message());
  std::string bad_magic = good;
  bad_magic[0] ^= 0x5A;
  check(!parseRequests(bad_magic, 1, &out).ok(), "a wrong magic is an error");
  std::string huge = good;
  huge[4] = huge[5] = huge[6] = '\xff';  // the count
  check(!parseRequests(huge, 1, &out).ok(), "an absurd count is an error, not an allocation");
  std::vector<Response> responses;
  check(!parseResponses(good, 1, &responses).ok(), "a request list is not a response list");
}

void testTensorTable() {
  TensorTable t;
  const TensorId a = t.intern(0, "grad.a"), b = t.intern(1, "grad.a");
  check(a != b && t.find(0, "grad.a") == a && t.find(1, "grad.a") == b && t.find(0, "nope") == -1,
        "(set, name) interned apart");
  check(t.intern(0, "grad.a") == a, "interning twice gives the same id");
  TensorEntry e;
  e.request = request(0, "grad.a");
  e.handle = std::make_shared<Handle>();
  t.addPending(a, std::move(e), TensorTable::State::kToSend, -1);
  check(t.anyPending() && t.anyToSend() && t.pending().size() == 1, "pending and to send");
  t.setState(a, TensorTable::State::kSubmitted);
  check(!t.anyToSend(), "submitted is no longer to send");
  TensorEntry taken = t.takePending(a);
  check(taken.request.name == "grad.a" && !t.anyPending(), "taken back out");
  t.collect([](TensorId) { return false; });
  check(t.find(0, "grad.a") == -1 && t.live() == 0, "collect recycles ids nobody keeps");
  const TensorId c = t.intern(2, "other");
  check(c == a || c == b, "a recycled id is reused");
}

ResponsePtr single(const std::string& name, int32_t set = 0) {
  auto r = std::make_shared<Response>();
  r->process_set_id = set;
  r->names = {name};
  r->shapes = {{4}};
  return r;
}

void testResponseCache() {
  ResponseCache cache(3);
  Request ra = request(0, "a");
  cache.put(10, &ra, single("a"), 1);
  const int bit = cache.find(10);
  check(bit == 0 && cache.occupied(0) && cache.extent() == 1 && cache.id(0) == 10, "put takes the lowest bit");
  check(cache.matches(bit, ra), "the same request matches");
  Request other = ra;
  other.shape = {5};
  check(!cache.matches(bit, other), "another shape does not match");
  Request split = request(0, "s", {4}, DataType::kFloat32, OpType::kAlltoall);
  split.aux = {2, 2};
  cache.put(11, &split, single("s"), 2);
  Request split2 = split;
  split2.aux = {1, 3};
  check(cache.matches(cache.find(11), split2), "alltoall splits may change without renegotiation");
  const uint64_t gen = cache.generation();
  cache.put(12, nullptr, single("c"), 3);
  check(cache.generation() != gen && cache.find(12) == 2, "third entry; the generation moves");
  check(!cache.matches(cache.find(12), request(0, "c")), "an entry without this rank's request never matches");
  cache.touch(0, 9);  // 'a' used recently: 's' (cycle 2) is the least recently used
  cache.put(13, &ra, single("d"), 10);
  check(cache.find(11) == -1 && cache.find(13) == 1 && cache.find(10) == 0, "LRU eviction");
  cache.erase(2);
  check(cache.extent() == 2 && !cache.occupied(2), "erase shrinks the extent");
  check(cache.occupiedWord(0) == 0x3, "occupied bits by word");
}

struct CoordinatorFixture {
  std::vector<int> world{0, 1, 2};
  std::vector<int> pair{0, 2};
  Coordinator c{3, [this](int32_t id) -> const std::vector<int>* {
                  return id == 0 ? &world : id == 5 ? &pair : nullptr;
                }};
  std::vector<Response> out;
  void add(const Request& r) { c.add(r, Coordinator::Clock::now(), &out); }
};

void testCoordinator() {
  {
    CoordinatorFixture f;
    f.add(request(0, "x"));
    f.add(request(1, "x"));
    check(f.out.empty() && !f.c.empty(), "not ready until every member submitted");
    f.add(request(2, "x"));
    check(f.out.size() == 1 && !f.out[0].isError() && f.out[0].names[0] == "x" && f.c.empty(), "ready");
  }
  {
    CoordinatorFixture f;
    f.add(request(0, "x"));
    f.add(request(1, "x", {4}, DataType::kFloat64));
    f.add(request(2, "x"));
    check(f.out.size() == 1 && contains(f.out[0].error, "Mismatched data types") &&
              contains(f.out[0].error, "rank 1"),
          "dtype mismatch names the rank: " + (f.out.empty() ? "" : f.out[0].error));
  }
  {
    CoordinatorFixture f;
    Request a = request(0, "b", {4}, DataType::kFloat32, OpType::kBroadcast), b = a;
    b.rank = 2;
    b.root = 2;
    f.add(a);
    Request c = a;
    c.rank = 1;
    f.add(c);
    f.add(b);
    check(f.out.size() == 1 && contains(f.out[0].error, "root"), "root mismatch");
  }
  {
    CoordinatorFixture f;  // allgather: first dims may differ, the rest must not
    f.add(request(0, "g", {1, 3}, DataType::kFloat32, OpType::kAllgather));
    f.add(request(1, "g", {2, 3}, DataType::kFloat32, OpType::kAllgather));
    f.add(request(2, "g", {3, 3}, DataType::kFloat32, OpType::kAllgather));
    check(f.out.size() == 1 && !f.out[0].isError() && f.out[0].first_dims == std::vector<int64_t>({1, 2, 3}),
          "allgather first dims per member");
  }
  {
    CoordinatorFixture f;  // one rank rejected its own arguments: everyone gets the reason
    Request bad = request(1, "t", {4}, DataType::kFloat32, OpType::kAlltoall);
    bad.error = "alltoall splits sum to 5 but the first dimension is 4";
    f.add(request(0, "t", {4}, DataType::kFloat32, OpType::kAlltoall));
    f.add(bad);
    f.add(request(2, "t", {4}, DataType::kFloat32, OpType::kAlltoall));
    check(f.out.size() == 1 && contains(f.out[0].error, "rank 1 rejected tensor 't'") &&
              contains(f.out[0].error, "sum to 5"),
          "a withdrawn request fails the tensor on every rank: " + (f.out.empty() ? "" : f.out[0].error));
  }
  {
    CoordinatorFixture f;  // a process set: only its members count
    Request a = request(0, "p"), b = request(2, "p");
    a.process_set_id = b.process_set_id = 5;
    f.add(a);
    check(f.out.empty(), "set member 2 still missing");
    f.add(b);
    check(f.out.size() == 1 && !f.out[0].isError(), "ready once both members of set 5 submitted");
  }
  {
    CoordinatorFixture f;  // join: the joined rank counts as submitted for allreduce
    Request j = request(2, "join", {}, DataType::kFloat32, OpType::kJoin);
    f.add(j);
    f.add(request(0, "r"));
    f.add(request(1, "r"));
    check(f.out.size() == 1 && !f.out[0].isError(), "allreduce runs without the joined rank");
    f.add(request(0, "a2", {3}, DataType::kFloat32, OpType::kAlltoall));
    f.add(request(1, "a2", {3}, DataType::kFloat32, OpType::kAlltoall));
    check(f.out.size() == 2 && contains(f.out[1].error, "joined"), "alltoall refuses a joined rank");
  }
  {
    CoordinatorFixture f;  // stall: fail after fail_s, naming the missing ranks
    f.add(request(0, "s"));
    std::vector<Response> out;
    f.c.checkStalls(Coordinator::Clock::now() + std::chrono::seconds(100), 10, 60, &out);
    check(out.size() == 1 && contains(out[0].error, "[1, 2]") && f.c.empty(), "stall shutdown names ranks 1 and 2");
  }
}

// A member-only add (aux: the new set's ranks) or remove (aux: the set's id) from `rank`.
Request change(int rank, const std::string& name, std::vector<int64_t> aux, OpType op = OpType::kAddProcessSet) {
  Request r = request(rank, name, {}, DataType::kFloat32, op);
  r.process_set_id = kMembersOnlySetId;
  r.aux = std::move(aux);
  return r;
}

void testMembersOnlyChanges() {
  {
    CoordinatorFixture f;  // ranks 0 and 2 make a set; rank 1 never hears of it
    f.add(change(0, "pair", {0, 2}));
    check(f.out.empty(), "a member-only add waits for its other member");
    f.add(change(2, "pair", {0, 2}));
    check(f.out.size() == 1 && !f.out[0].isError() && f.out[0].op == OpType::kAddProcessSet &&
              f.out[0].process_set_id == kMembersOnlySetId && f.out[0].aux == std::vector<int64_t>({0, 2}) &&
              f.c.empty(),
          "ready once its members (not every rank) submitted it, carrying the ranks");
  }
  {
    CoordinatorFixture f;  // two sets at once, overlapping in rank 1, each done by its own members
    f.add(change(1, "left", {0, 1}));
    f.add(change(1, "right", {1, 2}));
    f.add(change(2, "right", {1, 2}));
    f.add(change(0, "left", {0, 1}));
    check(f.out.size() == 2 && f.out[0].names[0] == "right" && f.out[1].names[0] == "left" &&
              !f.out[0].isError() && !f.out[1].isError(),
          "concurrent member-only adds complete in the order their members finished");
  }
  {
    CoordinatorFixture f;  // members disagree on the ranks: both named, both lists shown
    f.add(change(1, "m", {0, 1, 2}));
    f.add(change(0, "m", {0, 1}));
    check(f.out.size() == 1 && contains(f.out[0].error, "rank 1") && contains(f.out[0].error, "rank 0") &&
              contains(f.out[0].error, "[0, 1, 2]") && contains(f.out[0].error, "[0, 1]") && f.c.empty(),
          "a member mismatch fails the add at once: " + (f.out.empty() ? "" : f.out[0].error));
  }
  {
    CoordinatorFixture f;  // a member's own rejection fails it at once, with the reason
    Request bad = change(2, "r", {0, 2});
    bad.error = "member ranks contain duplicates";
    f.add(change(0, "r", {0, 2}));
    f.add(bad);
    check(f.out.size() == 1 && contains(f.out[0].error, "rank 2 rejected") && f.c.empty(),
          "a rejected member-only add fails for its submitters");
  }
  {
    CoordinatorFixture f;  // stall: only the absent member is named, not the ranks outside
    f.add(change(0, "s", {0, 2}));
    std::vector<Response> out;
    f.c.checkStalls(Coordinator::Clock::now() + std::chrono::seconds(100), 10, 60, &out);
    check(out.size() == 1 && contains(out[0].error, "ranks [2] never") && f.c.empty(),
          "a stalled member-only add names its absent member only: " + (out.empty() ? "" : out[0].error));
  }
  {
    CoordinatorFixture f;  // a joined member: the add cannot run, and says why
    f.add(request(2, "join", {}, DataType::kFloat32, OpType::kJoin));
    f.add(change(0, "j", {0, 2}));
    check(f.out.size() == 1 && contains(f.out[0].error, "joined"), "a member-only add refuses a joined member");
  }
  {
    CoordinatorFixture f;  // remove: the members of the set it removes (set 5 is ranks 0 and 2)
    f.add(change(0, "rm5", {5}, OpType::kRemoveProcessSet));
    check(f.out.empty(), "a member-only remove waits for the set's other member");
    f.add(change(2, "rm5", {5}, OpType::kRemoveProcessSet));
    check(f.out.size() == 1 && !f.out[0].isError() && f.out[0].aux == std::vector<int64_t>({5}),
          "a member-only remove is ready once the set's members submitted it");
    f.add(change(1, "rm5b", {5}, OpType::kRemoveProcessSet));
    check(f.out.size() == 2 && contains(f.out[1].error, "rank 1 is not among its members [0, 2]"),
          "a non-member cannot remove the set");
    f.add(change(0, "rm7", {7}, OpType::kRemoveProcessSet));
    check(f.out.size() == 3 && contains(f.out[2].error, "process set 7 does not exist"), "unknown set named");
  }
}

}  // namespace

int main() {
  testWireRoundTrip();
  testWireRejectsMalformed();
  testTensorTable();
  testResponseCache();
  testCoordinator();
  testMembersOnlyChanges();
  return testing::summary();
}
