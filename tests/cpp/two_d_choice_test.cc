// two_d_choice_test: where the 2D allreduce runs without a flag — groups by topology, sizes by the alpha-beta model.
//
// No ranks: twoDGroupSize, twoDCrossoverBytes and chooseTwoD are pure functions of the config, a
// Topology and link fits. tests/single/test_cpp_units.py builds and runs it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "check.h"
#include "engine/two_d_choice.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

Topology topo(int hosts, int per_host, bool homogeneous = true) {
  Topology t;
  t.size = hosts * per_host;
  t.local_size = per_host;
  t.cross_size = hosts;
  t.homogeneous = homogeneous;
  return t;
}

Config mode(TwoDMode m) {
  Config c;
  c.two_d = m;
  return c;
}

// 1 Gbit/s between hosts (8 ns/B, 100 us a message), shared memory 0.2 ns/B and 5 us.
CostModel gigabit() {
  CostModel m;
  m.shm = {true, 5e-6, 0.2e-9};
  m.net = {true, 100e-6, 8e-9};
  return m;
}

TwoDCosts costsOf(const CostModel& m, int hosts, int group, int64_t rd_max) {
  TwoDCosts c;
  c.shm = m.shm;
  c.net = m.net;
  c.hosts = hosts;
  c.group = group;
  c.rd_max_bytes = rd_max;
  return c;
}

void testGroupSize() {
  const Config automatic = mode(TwoDMode::kAuto);
  check(twoDGroupSize(automatic, topo(2, 2)) == 2, "auto, 2 hosts x 2: groups of 2");
  check(twoDGroupSize(automatic, topo(4, 8)) == 8, "auto, 4 hosts x 8: groups of 8");
  check(twoDGroupSize(automatic, topo(1, 4)) == 0, "auto, one host: none");
  check(twoDGroupSize(automatic, topo(2, 1)) == 0, "auto, one rank per host: none");
  check(twoDGroupSize(automatic, topo(2, 3, false)) == 0, "auto, unequal ranks per host: none");
  Config intra = automatic;
  intra.intra_size = 2;
  check(twoDGroupSize(intra, topo(2, 3, false)) == 2, "auto, unequal hosts with LIGHT_INTRA_SIZE: its groups");
  check(twoDGroupSize(intra, topo(1, 4)) == 0, "auto, one host, LIGHT_INTRA_SIZE: still none");
  Config on = mode(TwoDMode::kOn);
  on.intra_size = 2;
  check(twoDGroupSize(on, topo(1, 4)) == 2, "forced, one host with LIGHT_INTRA_SIZE=2 (tests' emulation)");
  check(twoDGroupSize(mode(TwoDMode::kOn), topo(1, 4)) == 0, "forced, one host of 4: one group, none");
  Config off = mode(TwoDMode::kOff);
  off.autotune.enabled = true;
  check(twoDGroupSize(off, topo(2, 2)) == 0, "forced off, even with autotune: none");
  Config tune = automatic;
  tune.autotune.enabled = true;
  check(twoDGroupSize(tune, topo(2, 2)) == 2, "autotune: groups to switch live");
  check(twoDByRequest(tune) && twoDByRequest(mode(TwoDMode::kOn)) && !twoDByRequest(automatic) &&
            !twoDByRequest(off),
        "top-k and Adasum go two-level only when asked (forced, or autotune not forced off)");
}

void testCrossover() {
  // 2 x 2 at 1 Gbit/s: the leaders' doubling moves as many bytes as 2D over two hosts with fewer
  // latencies, so 2D starts where the ring takes over.
  const TwoDCosts g = costsOf(gigabit(), 2, 2, 64 << 10);
  check(twoDCrossoverBytes(g) == (64 << 10) + 1, "2 x 2, 1 Gbit/s: 2D from the ring's first size, got " +
                                                      std::to_string(twoDCrossoverBytes(g)));
  check(g.twoD(64 << 20) < 0.7 * g.ring(64 << 20), "2 x 2: 2D about 1.5x the ring on 64 MiB");
  // Ring only (LIGHTCC_RD_ALLREDUCE_BYTES=0): 2D has fewer latencies and bytes, so every size.
  check(twoDCrossoverBytes(costsOf(gigabit(), 2, 2, 0)) == 0, "ring only: 2D from 0 bytes");
  // A network as fast as shared memory: 2D's extra phases never pay.
  CostModel fast = gigabit();
  fast.net = {true, 5e-6, 0.2e-9};
  check(twoDCrossoverBytes(costsOf(fast, 2, 2, 64 << 10)) == kTwoDNever, "net as fast as shm: never");
  // Slow shared memory relative to doubling's bytes, at 8 hosts: the crossover falls inside the
  // doubling range (log2(8) = 3 whole-buffer rounds lose to 2D's 2(n-1)/n).
  TwoDCosts eight = costsOf(gigabit(), 8, 4, 1 << 20);
  const int64_t x = twoDCrossoverBytes(eight);
  check(x > 0 && x <= (1 << 20), "8 x 4 with doubling up to 1 MiB: crossover inside it, got " + std::to_string(x));
  check(eight.twoD(static_cast<double>(x)) <= eight.flat(static_cast<double>(x)) &&
            eight.twoD(static_cast<double>(x - 1)) > eight.flat(static_cast<double>(x - 1)),
        "8 x 4: the crossover is the first size 2D wins");
}

// Fits a decade either side of a typical host (2 us, 0.3 ns/B) and 1 Gbit/s link (50 us, 2 ns/B).
CostModel randomFits(std::mt19937& gen, std::uniform_real_distribution<double>& e) {
  CostModel m;
  m.shm = {true, 2e-6 * std::pow(10, e(gen)), 0.3e-9 * std::pow(10, e(gen))};
  m.net = {true, 50e-6 * std::pow(10, e(gen)), 2e-9 * std::pow(10, e(gen))};
  return m;
}

// Whatever the fits: from the crossover on 2D never loses, and just below it does.
void testCrossoverProperty() {
  std::mt19937 gen(11);
  std::uniform_real_distribution<double> e(-1, 1);
  int bad = 0;
  for (int i = 0; i < 2000; ++i) {
    const CostModel m = randomFits(gen, e);
    const int hosts = 2 + i % 7, group = 2 + (i / 7) % 7;
    const int64_t rd = (i % 3) * (64 << 10);
    const TwoDCosts c = costsOf(m, hosts, group, rd);
    const int64_t x = twoDCrossoverBytes(c);
    if (x == kTwoDNever) continue;
    for (double mult : {1.0, 1.5, 3.0, 100.0, 1e4}) {
      const double at = std::max(1.0, static_cast<double>(x)) * mult;
      if (c.twoD(at) > c.flat(at) * (1 + 1e-9)) ++bad;
    }
    if (x > 0 && c.twoD(static_cast<double>(x - 1)) <= c.flat(static_cast<double>(x - 1)) * (1 - 1e-9) &&
        x != rd + 1) {
      ++bad;  // wins just below but was not taken: only allowed at the doubling/ring seam
    }
  }
  check(bad == 0, "crossover property over random fits: " + std::to_string(bad) + " violations");
}

// Allgathers: the 2D allgather against the flat ring allgather (no doubling piece).
void testAllgatherCrossover() {
  const TwoDCosts g = costsOf(gigabit(), 2, 2, 64 << 10);
  // 2 x 2 at 1 Gbit/s: one network latency instead of three, and fewer bytes: every size.
  check(twoDAllgatherCrossoverBytes(g) == 0, "allgather, 2 x 2, 1 Gbit/s: 2D from 0 bytes, got " +
                                                 std::to_string(twoDAllgatherCrossoverBytes(g)));
  check(g.allgatherTwoD(64 << 20) < 0.7 * g.allgatherRing(64 << 20), "allgather 2 x 2: (n-1)/n against (p-1)/p");
  check(std::abs(g.allgatherRing(1e6) - g.allgatherRing(0) - (g.ring(1e6) - g.ring(0)) / 2) < 1e-12,
        "the allgather ring moves half the allreduce ring's bytes");
  // Slow shared memory, fast network latency: 2D's two shm phases cost more than the p-1 - (n-1)
  // network latencies it saves, so it starts where its smaller slope has paid for them.
  CostModel slow_shm = gigabit();
  slow_shm.shm = {true, 333e-6, 1e-9};
  slow_shm.net = {true, 10e-6, 8e-9};
  const TwoDCosts s = costsOf(slow_shm, 2, 4, 0);
  const int64_t x = twoDAllgatherCrossoverBytes(s);
  check(x > 0 && x != kTwoDNever, "slow shm: a positive allgather crossover, got " + std::to_string(x));
  check(s.allgatherTwoD(static_cast<double>(x)) <= s.allgatherRing(static_cast<double>(x)) &&
            s.allgatherTwoD(static_cast<double>(x - 1)) > s.allgatherRing(static_cast<double>(x - 1)),
        "slow shm: the allgather crossover is the first size 2D wins");
  CostModel fast = gigabit();
  fast.net = {true, 5e-6, 0.2e-9};
  check(twoDAllgatherCrossoverBytes(costsOf(fast, 2, 2, 64 << 10)) == kTwoDNever, "allgather, net as fast as shm: never");
  // Random fits: never exactly where the allreduce's is never (the engine takes it only where 2D
  // is on), and 2D no slower from the crossover on.
  std::mt19937 gen(12);
  std::uniform_real_distribution<double> e(-1, 1);
  int bad = 0;
  for (int i = 0; i < 2000; ++i) {
    const CostModel m = randomFits(gen, e);
    const TwoDCosts c = costsOf(m, 2 + i % 7, 2 + (i / 7) % 7, (i % 3) * (64 << 10));
    const int64_t ag = twoDAllgatherCrossoverBytes(c);
    if ((ag == kTwoDNever) != (twoDCrossoverBytes(c) == kTwoDNever)) ++bad;
    if (ag == kTwoDNever) continue;
    for (double mult : {1.0, 1.5, 3.0, 100.0, 1e4}) {
      const double at = std::max(1.0, static_cast<double>(ag)) * mult;
      if (c.allgatherTwoD(at) > c.allgatherRing(at) * (1 + 1e-9)) ++bad;
    }
    if (ag > 0 && c.allgatherTwoD(static_cast<double>(ag - 1)) <= c.allgatherRing(static_cast<double>(ag - 1)) * (1 - 1e-9)) {
      ++bad;
    }
  }
  check(bad == 0, "allgather crossover property over random fits: " + std::to_string(bad) + " violations");
}

// Reducescatters: the 2D form against the flat ring, by input bytes per rank.
void testReducescatterCrossover() {
  const TwoDCosts g = costsOf(gigabit(), 2, 2, 64 << 10);
  check(twoDReducescatterCrossoverBytes(g) == 0, "reducescatter, 2 x 2, 1 Gbit/s: 2D from 0 bytes, got " +
                                                     std::to_string(twoDReducescatterCrossoverBytes(g)));
  // 2 x 2: the network carries (n-1)/n M/g = M/4 against the ring's (p-1)/p M = 3M/4.
  check(g.reducescatterTwoD(64 << 20) < 0.4 * g.reducescatterRing(64 << 20), "reducescatter 2 x 2: M/4 against 3M/4");
  CostModel fast = gigabit();
  fast.net = {true, 5e-6, 0.1e-9};
  fast.shm = {true, 5e-6, 0.2e-9};
  check(twoDReducescatterCrossoverBytes(costsOf(fast, 2, 2, 64 << 10)) == kTwoDNever,
        "reducescatter, net faster than shm: never");
  std::mt19937 gen(13);
  std::uniform_real_distribution<double> e(-1, 1);
  int bad = 0;
  for (int i = 0; i < 2000; ++i) {
    const TwoDCosts c = costsOf(randomFits(gen, e), 2 + i % 7, 2 + (i / 7) % 7, 0);
    const int64_t rs = twoDReducescatterCrossoverBytes(c);
    if (rs == kTwoDNever) continue;
    for (double mult : {1.0, 1.5, 3.0, 100.0, 1e4}) {
      const double at = std::max(1.0, static_cast<double>(rs)) * mult;
      if (c.reducescatterTwoD(at) > c.reducescatterRing(at) * (1 + 1e-9)) ++bad;
    }
    if (rs > 0 && c.reducescatterTwoD(static_cast<double>(rs - 1)) <=
                      c.reducescatterRing(static_cast<double>(rs - 1)) * (1 - 1e-9)) {
      ++bad;
    }
  }
  check(bad == 0, "reducescatter crossover property over random fits: " + std::to_string(bad) + " violations");
}

void testChoice() {
  TwoDChoice on = chooseTwoD(mode(TwoDMode::kOn), topo(2, 2), 2, CostModel{});
  check(on.on() && on.from_bytes == 0 && on.allgather_from_bytes == 0 && on.reducescatter_from_bytes == 0 &&
            on.by_request,
        "forced: every size, allgathers, reducescatters, top-k and Adasum too");
  TwoDChoice one = chooseTwoD(mode(TwoDMode::kAuto), topo(1, 2), 0, CostModel{});
  check(!one.on() && one.reason.find("one host") != std::string::npos, "one host: off, says why: " + one.reason);
  TwoDChoice flat = chooseTwoD(mode(TwoDMode::kAuto), topo(2, 1), 0, CostModel{});
  check(!flat.on() && flat.reason.find("one rank per host") != std::string::npos, "2 x 1: off: " + flat.reason);
  TwoDChoice off = chooseTwoD(mode(TwoDMode::kOff), topo(2, 2), 0, CostModel{});
  check(!off.on() && off.reason.find("LIGHT_2D_ALLREDUCE=0") != std::string::npos, "forced off: " + off.reason);
  check(off.allgather_from_bytes == kTwoDNever && one.allgather_from_bytes == kTwoDNever &&
            flat.allgather_from_bytes == kTwoDNever && off.reducescatter_from_bytes == kTwoDNever &&
            one.reducescatter_from_bytes == kTwoDNever && flat.reducescatter_from_bytes == kTwoDNever,
        "no groups (forced off, one host, one rank per host): allgathers flat");
  TwoDChoice a = chooseTwoD(mode(TwoDMode::kAuto), topo(2, 2), 2, gigabit());
  check(a.on() && a.group == 2 && a.from_bytes == (64 << 10) + 1 && !a.by_request,
        "auto, 2 x 2 at 1 Gbit/s: on from the crossover: " + a.reason);
  check(a.reason.find("2 host(s), 2 rank(s) per host") != std::string::npos &&
            a.reason.find("crossover") != std::string::npos,
        "the reason names the hosts, ranks per host and crossover: " + a.reason);
  check(a.allgather_from_bytes == 0 && a.reason.find("allgather 2D from 0 gathered bytes") != std::string::npos,
        "auto, 2 x 2 at 1 Gbit/s: allgathers 2D at every size, logged: " + a.reason);
  check(a.reducescatter_from_bytes == 0 && a.reason.find("reducescatter 2D from 0 input bytes") != std::string::npos,
        "auto, 2 x 2 at 1 Gbit/s: reducescatters 2D at every size, logged: " + a.reason);
  CostModel fast = gigabit();
  fast.net = {true, 5e-6, 0.2e-9};
  TwoDChoice f = chooseTwoD(mode(TwoDMode::kAuto), topo(2, 2), 2, fast);
  check(!f.on() && f.group == 2, "auto on a network as fast as shm: groups built, never taken: " + f.reason);
  check(f.allgather_from_bytes == kTwoDNever && f.reason.find("allgather flat") != std::string::npos,
        "net as fast as shm: allgathers flat too: " + f.reason);
  Config ring_only = mode(TwoDMode::kAuto);
  ring_only.links.force_ring = true;
  check(chooseTwoD(ring_only, topo(2, 2), 2, gigabit()).from_bytes == 0, "LIGHTCC_FORCE_RING: no doubling piece");
}

}  // namespace

int main() {
  testGroupSize();
  testCrossover();
  testCrossoverProperty();
  testAllgatherCrossover();
  testReducescatterCrossover();
  testChoice();
  return lightcc::testing::summary();
}
