// cpu_binding_test: when LIGHTCC_BIND binds a rank, and which cores each local rank gets.
//
// decideBinding and shareOf are pure functions of counts and core lists, so every rule is checked
// here whatever this machine's core count (the multi-process test needs 3 or more cores for the
// "narrowed by a launcher" rule). tests/single/test_cpp_units.py builds and runs it.
#include <set>
#include <string>
#include <vector>

#include "check.h"
#include "engine/cpu_binding.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

void testAuto() {
  check(decideBinding(CpuBinding::kAuto, 2, 16, 16).bind, "auto: 2 ranks on 16 free cores bind");
  check(decideBinding(CpuBinding::kAuto, 16, 16, 16).bind, "auto: one core each still binds");
  check(!decideBinding(CpuBinding::kAuto, 1, 16, 16).bind, "auto: a lone rank stays unbound");
  check(!decideBinding(CpuBinding::kAuto, 3, 2, 2).bind, "auto: more ranks than cores stay unbound");
  const BindingChoice narrowed = decideBinding(CpuBinding::kAuto, 2, 8, 16);
  check(!narrowed.bind, "auto: cores a launcher narrowed are left alone");
  check(narrowed.why.find("8 of 16") != std::string::npos, "auto: the reason names the narrowing: " + narrowed.why);
  check(decideBinding(CpuBinding::kAuto, 2, 16, -1).bind, "auto: an unknown online count does not block binding");
}

void testForced() {
  check(decideBinding(CpuBinding::kCore, 2, 8, 16).bind, "core: binds even where a launcher narrowed");
  check(decideBinding(CpuBinding::kCore, 3, 2, 2).bind, "core: binds even with more ranks than cores");
  check(!decideBinding(CpuBinding::kNone, 2, 16, 16).bind, "none: never binds");
}

void testShares() {
  const std::vector<int> cores = {0, 1, 2, 3, 4, 5, 6, 7};
  check(shareOf(cores, 0, 2) == std::vector<int>({0, 1, 2, 3}), "2 ranks on 8 cores: rank 0 the first half");
  check(shareOf(cores, 1, 2) == std::vector<int>({4, 5, 6, 7}), "2 ranks on 8 cores: rank 1 the second half");
  for (int l = 1; l <= 8; ++l) {
    std::multiset<int> seen;
    for (int r = 0; r < l; ++r) {
      const std::vector<int> s = shareOf(cores, r, l);
      check(!s.empty(), "every rank gets a core (l=" + std::to_string(l) + ")");
      seen.insert(s.begin(), s.end());
    }
    check(seen == std::multiset<int>(cores.begin(), cores.end()),
          "the shares are disjoint and cover every core (l=" + std::to_string(l) + ")");
  }
  const std::vector<int> sparse = {2, 5, 9};  // a mask with holes: shares index into it
  check(shareOf(sparse, 1, 3) == std::vector<int>({5}), "shares come from the listed cores");
  check(shareOf(sparse, 4, 5) == std::vector<int>({5}), "more ranks than cores: core i mod c");
  check(shareOf({}, 0, 2).empty(), "no cores, no share");
}

void testThisThread() {
  check(coresOfThisThread() >= 1, "this thread may run on at least one core");
}

}  // namespace

int main() {
  testAuto();
  testForced();
  testShares();
  testThisThread();
  return lightcc::testing::summary();
}
