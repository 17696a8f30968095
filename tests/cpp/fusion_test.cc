// Tests the fusion scheduler (size/order/cost bucket logic) and the alpha-beta fit, without ranks.
//
// Pure (no sockets, under a second). tests/single/test_cpp_units.py builds it with CMake
// (-DLIGHTCC_BUILD_TESTS=ON) against lightcc_core and runs it; by hand, after a build in build/dev:
//   g++ -std=c++17 -O1 -Wall -Wextra -pthread -Icsrc -o /tmp/fusion_test tests/cpp/fusion_test.cc
//       -Lbuild/dev -l:liblightcc_core.a && /tmp/fusion_test
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "check.h"
#include "engine/cost_model.h"
#include "engine/fusion_scheduler.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

Response tensor(const std::string& name, int64_t floats, DataType dtype = DataType::kFloat32) {
  Response r;
  r.op = OpType::kAllreduce;
  r.dtype = dtype;
  r.names = {name};
  r.shapes = {{floats}};
  return r;
}

std::vector<std::string> names(const std::vector<ResponsePtr>& plan) {
  std::vector<std::string> out;
  for (const auto& r : plan) {
    std::string s;
    for (const auto& n : r->names) s += (s.empty() ? "" : "+") + n;
    out.push_back(s);
  }
  return out;
}

// The engine hands the scheduler shared responses; the tests build them by value.
std::vector<ResponsePtr> schedule(FusionScheduler& s, const std::vector<Response>& agreed, bool flush,
                                  bool device_ready = true) {
  std::vector<ResponsePtr> ptrs;
  for (const Response& r : agreed) ptrs.push_back(std::make_shared<const Response>(r));
  return s.schedule(ptrs, flush, device_ready);
}

Response gpu(const std::string& name, int64_t floats) {
  Response r = tensor(name, floats);
  r.on_device = true;
  return r;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "[" + x + "]";
  return s;
}

FusionScheduler::Options orderOptions() {
  FusionScheduler::Options o;
  o.strategy = FusionStrategy::kOrder;
  o.threshold = 1 << 20;
  o.first_bucket = 1000;  // bytes: a, b (400 + 400) fit; c does not
  o.bucket = 1 << 20;
  return o;
}

void testSizeIsPlanFusion() {
  FusionScheduler::Options o;
  o.threshold = 1 << 20;
  FusionScheduler s(o, nullptr);
  auto plan = schedule(s, {tensor("a", 100), tensor("b", 100), tensor("c", 100, DataType::kFloat64)}, false);
  check(join(names(plan)) == "[a+b][c]", "size: fuses per cycle by class: " + join(names(plan)));
  check(!s.holding(), "size never holds");
}

void testOrderBucketsAndHolding() {
  FusionScheduler s(orderOptions(), nullptr);
  // Step 1: every tensor is new and runs at once; the plan is fixed from this order.
  auto p1 = schedule(s, {tensor("a", 100), tensor("b", 100), tensor("c", 100), tensor("d", 100)}, false);
  check(join(names(p1)) == "[a+b+c+d]", "order: first sightings run at once: " + join(names(p1)));
  check(s.bucketCount() == 2 && s.plannedBuckets() == 2, "order: small first bucket {a,b}, then {c,d}");
  // Step 2, one tensor per cycle: a is held until b; c until d.
  check(schedule(s, {tensor("a", 100)}, false).empty() && s.holding(), "order: a held for b");
  check(join(names(schedule(s, {tensor("b", 100)}, false))) == "[a+b]", "order: bucket {a,b} complete");
  check(schedule(s, {tensor("c", 100)}, false).empty(), "order: c held for d");
  check(join(names(schedule(s, {tensor("d", 100)}, false))) == "[c+d]", "order: bucket {c,d} complete");
  check(!s.holding(), "order: nothing held after complete buckets");
  // Reversed arrival inside a bucket runs in bucket (first-seen) order.
  schedule(s, {tensor("b", 100)}, false);
  check(join(names(schedule(s, {tensor("a", 100)}, false))) == "[a+b]", "order: bucket order kept");
}

void testFlushAndEviction() {
  FusionScheduler s(orderOptions(), nullptr);
  schedule(s, {tensor("a", 100), tensor("b", 100)}, false);
  // b goes unused from now on: a waits until a flush, three times, then b leaves the plan.
  for (int step = 0; step < 3; ++step) {
    check(schedule(s, {tensor("a", 100)}, false).empty(), "evict: a held, step " + std::to_string(step));
    check(join(names(schedule(s, {}, true))) == "[a]", "evict: flush runs a, step " + std::to_string(step));
  }
  check(s.flushes() == 3, "evict: three flushes counted");
  check(join(names(schedule(s, {tensor("a", 100)}, false))) == "[a]", "evict: b left, a runs alone at once");
  check(s.plannedBuckets() == 1, "evict: bucket {a} still planned");
  // b comes back: a new tensor again, runs at once, re-enters the plan.
  check(join(names(schedule(s, {tensor("b", 100)}, false))) == "[b]", "evict: b re-enters as new");
  check(!s.holding(), "evict: nothing held");
  check(s.plannedBuckets() == s.bucketCount(), "evict: every bucket has members");
}

void testPassThroughAndDeterminism() {
  auto alone = [](const Response& r) { return r.names.front() == "big"; };
  FusionScheduler s1(orderOptions(), alone), s2(orderOptions(), alone);
  Response bcast = tensor("bc", 10);
  bcast.op = OpType::kBroadcast;
  Response err = tensor("e", 10);
  err.error = "mismatch";
  std::vector<std::vector<Response>> cycles = {
      {tensor("a", 100), tensor("big", 1000), tensor("b", 100), bcast},
      {tensor("b", 100), err},
      {tensor("big", 1000), tensor("a", 100)},
  };
  for (size_t i = 0; i < cycles.size(); ++i) {
    auto p1 = names(schedule(s1, cycles[i], false)), p2 = names(schedule(s2, cycles[i], false));
    check(p1 == p2, "determinism: identical plans from identical input, cycle " + std::to_string(i));
  }
  check(!s1.holding(), "pass-through: broadcast, errors and top-k tensors never held");
  Response remove;
  remove.op = OpType::kRemoveProcessSet;
  remove.names = {"rm"};
  schedule(s1, {tensor("a", 100)}, false);
  auto p = names(schedule(s1, {remove}, false));
  check(join(p) == "[a][rm]", "process-set change flushes held tensors first: " + join(p));
}

void testDevicePacing() {
  FusionScheduler::Options o;
  o.threshold = 1 << 20;
  o.pace_device = true;
  auto alone = [](const Response& r) { return r.names.front() == "topk"; };
  FusionScheduler s(o, alone);
  // Every GPU ready: runs as agreed, fused per cycle like plain size.
  check(join(names(schedule(s, {gpu("a", 100), gpu("b", 100)}, false, true))) == "[a+b]", "pacing: ready runs now");
  // A busy GPU somewhere: GPU allreduces wait; host tensors, top-k ones and broadcasts do not.
  Response host = tensor("h", 100), bcast = gpu("bc", 10), err = gpu("e", 10);
  bcast.op = OpType::kBroadcast;
  err.error = "mismatch";
  auto p = join(names(schedule(s, {gpu("c", 100), host, gpu("topk", 1000), bcast, err}, false, false)));
  check(p == "[h][topk][bc][e]", "pacing: only fusable GPU allreduces wait: " + p);
  check(schedule(s, {gpu("d", 100)}, false, false).empty(), "pacing: d waits too");
  check(s.holding() && s.pacedCount() == 2 && s.heldCount() == 2, "pacing: c and d held");
  check(s.anyHeld([](const FusionScheduler::Key& k) { return k.second == "d"; }), "pacing: held ones are visible");
  // Ready again: the held lead and fuse with this cycle's.
  p = join(names(schedule(s, {gpu("f", 100)}, false, true)));
  check(p == "[c+d+f]", "pacing: held ones fuse with the next: " + p);
  check(!s.holding(), "pacing: nothing held once ready");
  // A flush (a caller waits) runs them on a busy GPU; so does a process-set change.
  schedule(s, {gpu("g", 100)}, false, false);
  check(join(names(schedule(s, {}, true, false))) == "[g]" && s.flushes() == 1, "pacing: a flush runs held ones");
  Response remove;
  remove.op = OpType::kRemoveProcessSet;
  remove.names = {"rm"};
  schedule(s, {gpu("i", 100)}, false, false);
  p = join(names(schedule(s, {remove, gpu("j", 100)}, false, false)));
  check(p == "[rm][i+j]" || p == "[i+j][rm]", "pacing: a process-set change releases: " + p);
  check(!s.holding(), "pacing: nothing held after the change");
  // Two ranks fed the same cycles plan the same.
  FusionScheduler s1(o, alone), s2(o, alone);
  const std::vector<std::pair<std::vector<Response>, bool>> cycles = {
      {{gpu("a", 100)}, true}, {{gpu("b", 100), gpu("c", 100)}, false}, {{gpu("d", 100)}, false}, {{}, true}};
  for (size_t i = 0; i < cycles.size(); ++i) {
    auto p1 = names(schedule(s1, cycles[i].first, false, cycles[i].second));
    auto p2 = names(schedule(s2, cycles[i].first, false, cycles[i].second));
    check(p1 == p2, "pacing: identical plans from identical votes, cycle " + std::to_string(i));
  }
  // Off (LIGHT_DEVICE_INFLIGHT=0), or without fusion: a busy GPU holds nothing.
  o.pace_device = false;
  FusionScheduler off(o, nullptr);
  check(names(schedule(off, {gpu("a", 100)}, false, false)).size() == 1, "pacing off: runs now");
  o.pace_device = true;
  o.threshold = 0;
  FusionScheduler nofuse(o, nullptr);
  check(names(schedule(nofuse, {gpu("a", 100)}, false, false)).size() == 1, "threshold 0: pacing holds nothing");
}

void testFusionOff() {
  auto o = orderOptions();
  o.threshold = 0;
  FusionScheduler s(o, nullptr);
  schedule(s, {tensor("a", 100), tensor("b", 100)}, false);
  check(names(schedule(s, {tensor("a", 100)}, false)).size() == 1, "threshold 0: order holds nothing");
}

void testFitAndModel() {
  std::vector<double> x = {64, 65536, 1048576}, y;
  for (double b : x) y.push_back(50e-6 + b * 8e-9);
  LinkFit f = fitAlphaBeta(x, y);
  check(std::fabs(f.alpha - 50e-6) < 1e-9 && std::fabs(f.beta - 8e-9) < 1e-14, "fit recovers a line");
  // CI, 3 ranks on 2 cores: the 64-byte round trips waited longer than the 1 MiB ones.
  const LinkFit noisy = fitAlphaBeta(x, {90e-6, 70e-6, 60e-6});
  check(noisy.beta > 0 && std::fabs(noisy.beta - 60e-6 / 1048576) < 1e-18 && noisy.alpha > 0,
        "a falling fit prices bytes at the largest probe's rate, never free");
  CostModel m;
  m.ranks = 4;
  m.hosts = 2;
  m.per_host = 2;
  m.shm = {true, 5e-6, 0.2e-9};
  m.net = {true, 50e-6, 8e-9};
  double a = 0, b = 0;
  m.dense(&a, &b);
  check(std::fabs(a - 6 * 50e-6) < 1e-12 && std::fabs(b - 1.5 * 8e-9) < 1e-18, "flat ring formula");
  const int64_t bucket = m.bucketBytes(int64_t{1} << 30);
  check(std::llabs(bucket - static_cast<int64_t>(19 * a / b)) <= 1, "bucket is 95 % bandwidth-bound");
  check(m.firstBucketBytes(bucket) < bucket, "first bucket smaller");
  check(m.bucketBytes(100000) == 100000, "bucket capped by the threshold");
  m.select_per_byte = 0.5e-9;
  const int64_t t = m.topkThresholdBytes(0.01);
  check(t > 0 && t < (int64_t{1} << 30), "top-k wins for large tensors on a slow net");
  m.select_per_byte = 1e-6;  // selection slower than the network: never
  check(m.topkThresholdBytes(0.01) == INT64_MAX, "top-k never wins when selection dominates");
}

}  // namespace

int main() {
  testSizeIsPlanFusion();
  testOrderBucketsAndHolding();
  testFlushAndEviction();
  testPassThroughAndDeterminism();
  testDevicePacing();
  testFusionOff();
  testFitAndModel();
  return testing::summary();
}
