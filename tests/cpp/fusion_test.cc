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
std::vector<ResponsePtr> schedule(FusionScheduler& s, const std::vector<Response>& agreed, bool flush) {
  std::vector<ResponsePtr> ptrs;
  for (const Response& r : agreed) ptrs.push_back(std::make_shared<const Response>(r));
  return s.schedule(ptrs, flush);
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
  check(s.bucketCount() == 2, "order: small first bucket {a,b}, then {c,d}");
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
  // b comes back: a new tensor again, runs at once, re-enters the plan.
  check(join(names(schedule(s, {tensor("b", 100)}, false))) == "[b]", "evict: b re-enters as new");
  check(!s.holding(), "evict: nothing held");
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
  testFusionOff();
  testFitAndModel();
  return testing::summary();
}
