// overlap_choice_test: when LIGHTCC_OVERLAP lets gradient collectives start during the backward pass.
//
// decideOverlap is a pure function of the mode, the topology and this rank's core count, so each
// rule is checked here whatever this machine has. tests/single/test_cpp_units.py builds and runs it.
#include <string>

#include "check.h"
#include "engine/overlap_choice.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

void testAuto() {
  const OverlapChoice pinned = decideOverlap(Overlap::kAuto, true, 2, 1);
  check(!pinned.overlap, "auto: one host, one core a rank: collectives wait for the step");
  check(pinned.why.find("one core") != std::string::npos, "auto: the reason says why: " + pinned.why);
  check(decideOverlap(Overlap::kAuto, true, 2, 8).overlap, "auto: spare cores on one host overlap");
  check(decideOverlap(Overlap::kAuto, false, 4, 1).overlap, "auto: other hosts overlap even on one core");
  check(decideOverlap(Overlap::kAuto, true, 1, 1).overlap, "auto: a single rank keeps the default");
  const OverlapChoice unknown = decideOverlap(Overlap::kAuto, true, 2, 0);
  check(unknown.overlap, "auto: an unreadable affinity keeps the default");
  check(unknown.why.find("unknown") != std::string::npos, "auto: and says so: " + unknown.why);
}

void testForced() {
  check(decideOverlap(Overlap::kOn, true, 2, 1).overlap, "on: overlaps even on one core of one host");
  check(!decideOverlap(Overlap::kOff, false, 8, 16).overlap, "off: never overlaps");
}

}  // namespace

int main() {
  testAuto();
  testForced();
  return lightcc::testing::summary();
}
