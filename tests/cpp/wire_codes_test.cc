// wire_codes_test: enum codes from a peer are checked against the named counts, not magic numbers.
//
// A negotiation message carrying the first reduce-op or dtype code past kNumReduceOps /
// kNumDataTypes (what a newer peer would send) is refused naming the sender, the last valid codes
// (Bxor, uint16) pass and round-trip; an autotune vote with a strategy code past
// kNumFusionStrategies is refused naming the rank. tests/single/test_cpp_units.py runs it.
#include <string>
#include <vector>

#include "check.h"
#include "common/config.h"
#include "common/dtype.h"
#include "engine/autotuner.h"
#include "engine/message.h"
#include "engine/tuning.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

// Byte offsets of the codes in a one-item list: [u32 magic][u32 count], then a Request starts
// with [i32 rank][u8 op][u8 dtype][u8 reduce_op], a Response with [u8 op][u8 dtype][u8 reduce_op].
constexpr size_t kRequestDtype = 8 + 4 + 1, kRequestReduceOp = 8 + 4 + 2;
constexpr size_t kResponseDtype = 8 + 1, kResponseReduceOp = 8 + 2;

bool mentions(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

void testRequests() {
  Request r;
  r.rank = 1;
  r.name = "bits";
  r.dtype = DataType::kUInt16;
  r.reduce_op = ReduceOp::kBxor;
  r.shape = {3};
  const std::string bytes = serializeRequests({r});
  std::vector<Request> out;
  check(parseRequests(bytes, 1, &out).ok() && out.size() == 1 && out[0].reduce_op == ReduceOp::kBxor &&
            out[0].dtype == DataType::kUInt16 && out[0].sameSignature(r),
        "request: the last reduce op and dtype round-trip");
  std::string bad = bytes;
  bad[kRequestReduceOp] = static_cast<char>(kNumReduceOps);
  Status st = parseRequests(bad, 3, &out);
  check(!st.ok() && mentions(st, "rank 3") && mentions(st, "enum value " + std::to_string(kNumReduceOps)),
        "request: reduce op code kNumReduceOps refused naming the peer: " + st.message());
  bad = bytes;
  bad[kRequestDtype] = static_cast<char>(kNumDataTypes);
  st = parseRequests(bad, 2, &out);
  check(!st.ok() && mentions(st, "enum value " + std::to_string(kNumDataTypes)),
        "request: dtype code kNumDataTypes refused: " + st.message());
}

void testResponses() {
  Response r;
  r.dtype = DataType::kBool;
  r.reduce_op = ReduceOp::kBand;
  r.names = {"bits"};
  r.shapes = {{4}};
  const std::string bytes = serializeResponses({r});
  std::vector<Response> out;
  check(parseResponses(bytes, 0, &out).ok() && out.size() == 1 && out[0].reduce_op == ReduceOp::kBand,
        "response: a bitwise op round-trips");
  std::string bad = bytes;
  bad[kResponseReduceOp] = static_cast<char>(kNumReduceOps);
  check(!parseResponses(bad, 0, &out).ok(), "response: reduce op code kNumReduceOps refused");
  bad = bytes;
  bad[kResponseDtype] = static_cast<char>(kNumDataTypes);
  check(!parseResponses(bad, 0, &out).ok(), "response: dtype code kNumDataTypes refused");
}

void testFusionStrategyVote() {
  check(isValidFusionStrategy(static_cast<int>(FusionStrategy::kCost)) && !isValidFusionStrategy(kNumFusionStrategies) &&
            !isValidFusionStrategy(-1),
        "isValidFusionStrategy: size, order, cost only");
  Config config;
  Tuning tuning(config);
  check(tuning.start(0, 2).ok(), "start without autotune");
  TuneParams p = tuning.current()->params;
  uint64_t words[kTuneWords];
  encodeTune(2, p, false, words);
  words[3] = (words[3] & ~uint64_t{0xff}) | uint64_t(kNumFusionStrategies);  // the strategy byte
  SettingsPtr next;
  Status st = tuning.next(words, 5, 4, 2, &next);
  check(!st.ok() && mentions(st, "rank 4") && next == nullptr,
        "a strategy code past kNumFusionStrategies is refused naming the rank: " + st.message());
  p.strategy = FusionStrategy::kCost;
  encodeTune(3, p, false, words);
  check(tuning.next(words, 6, 4, 2, &next).ok() && next != nullptr && next->params.strategy == FusionStrategy::kCost,
        "the last strategy is accepted");
}

}  // namespace

int main() {
  testRequests();
  testResponses();
  testFusionStrategyVote();
  return lightcc::testing::summary();
}
