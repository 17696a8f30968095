// Two-D choice: the group size at init, the alpha-beta prices of flat and 2D, the crossover, the reason logged.
#include "engine/two_d_choice.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace lightcc {
namespace {

// Rounds of recursive doubling among p (recursive_doubling.cc): log2 of the largest power of two
// q <= p, plus the fold-in and fold-out rounds when q < p.
double doublingRounds(int p) {
  int q = 1, rounds = 0;
  while (q * 2 <= p) {
    q *= 2;
    ++rounds;
  }
  return q < p ? rounds + 2 : rounds;
}

// Smallest integer m >= lo with a2 + b2 m <= a1 + b1 m for every m' >= m on the line pair, given
// b2 < b1 (2D's slope below flat's): the crossing point, or lo when 2D already wins there.
int64_t crossing(double a1, double b1, double a2, double b2, int64_t lo) {
  if (a2 <= a1 + b1 * static_cast<double>(lo) - b2 * static_cast<double>(lo)) return lo;
  const double x = std::ceil((a2 - a1) / (b1 - b2));
  return x >= 9e18 ? kTwoDNever : std::max<int64_t>(lo, static_cast<int64_t>(x));
}

}  // namespace

int twoDGroupSize(const Config& config, const Topology& topo) {
  if (config.two_d == TwoDMode::kOff) return 0;
  const bool requested = config.two_d == TwoDMode::kOn || config.autotune.enabled;
  // Every rank must pick the same g: LIGHT_INTRA_SIZE, or the host size when all hosts are equal.
  const int g = config.intra_size > 0 ? static_cast<int>(config.intra_size) : topo.homogeneous ? topo.local_size : 0;
  if (g <= 0 || topo.size % g != 0 || topo.size / g < 2) return 0;
  // Auto: a group of one is the flat ring, and one host is shared memory's alone.
  if (!requested && (g < 2 || topo.cross_size < 2)) return 0;
  return g;
}

bool twoDByRequest(const Config& config) {
  return config.two_d == TwoDMode::kOn || (config.autotune.enabled && config.two_d != TwoDMode::kOff);
}

double TwoDCosts::twoD(double m) const {
  const double g = group, n = hosts;
  return 2 * (g - 1) * shm.alpha + 2 * (g - 1) / g * m * shm.beta + 2 * (n - 1) * net.alpha +
         2 * (n - 1) / n * m * net.beta;
}

double TwoDCosts::ring(double m) const {
  const double p = static_cast<double>(hosts) * group;
  return 2 * (p - 1) * net.alpha + 2 * (p - 1) / p * m * net.beta;
}

double TwoDCosts::doubling(double m) const {
  if (leaders && group > 1) return 2 * (shm.alpha + m * shm.beta) + doublingRounds(hosts) * (net.alpha + m * net.beta);
  return doublingRounds(hosts * group) * (net.alpha + m * net.beta);
}

double TwoDCosts::flat(double m) const {
  return m <= static_cast<double>(rd_max_bytes) ? doubling(m) : ring(m);
}

double TwoDCosts::allgatherTwoD(double m) const {
  const double g = group, n = hosts;
  return 2 * (g - 1) * shm.alpha + (g - 1) / g * m * shm.beta + (n - 1) * net.alpha + (n - 1) / n * m * net.beta;
}

double TwoDCosts::allgatherRing(double m) const {
  const double p = static_cast<double>(hosts) * group;
  return (p - 1) * net.alpha + (p - 1) / p * m * net.beta;
}

double TwoDCosts::reducescatterTwoD(double m) const {
  const double g = group, n = hosts;
  return 2 * (g - 1) * shm.alpha + (g - 1) / g * m * shm.beta + (n - 1) * net.alpha + (n - 1) / n * m / g * net.beta;
}

double TwoDCosts::reducescatterRing(double m) const { return allgatherRing(m); }

int64_t twoDReducescatterCrossoverBytes(const TwoDCosts& c) {
  const double a2 = c.reducescatterTwoD(0), b2 = c.reducescatterTwoD(1) - a2;
  const double ar = c.reducescatterRing(0), br = c.reducescatterRing(1) - ar;
  return b2 >= br ? kTwoDNever : crossing(ar, br, a2, b2, 0);
}

int64_t twoDAllgatherCrossoverBytes(const TwoDCosts& c) {
  // One line each: 2D must have the smaller slope, then it wins from where the lines cross.
  const double a2 = c.allgatherTwoD(0), b2 = c.allgatherTwoD(1) - a2;
  const double ar = c.allgatherRing(0), br = c.allgatherRing(1) - ar;
  return b2 >= br ? kTwoDNever : crossing(ar, br, a2, b2, 0);
}

int64_t twoDCrossoverBytes(const TwoDCosts& c) {
  // Each schedule is a + b m on a piece, so comparing ends and slopes is enough. Large sizes first:
  // the ring's piece runs to infinity, and 2D must win all of it from some size on.
  const double a2 = c.twoD(0), b2 = c.twoD(1) - a2;
  const double ar = c.ring(0), br = c.ring(1) - ar;
  if (b2 >= br) return kTwoDNever;
  const int64_t first_ring = c.rd_max_bytes > 0 ? c.rd_max_bytes + 1 : 0;
  const int64_t from_ring = crossing(ar, br, a2, b2, first_ring);
  if (from_ring > first_ring || first_ring == 0) return from_ring;
  // 2D wins on the whole ring piece; how far down into the doubling piece [0, rd_max]?
  const double top = static_cast<double>(c.rd_max_bytes);
  if (c.twoD(top) > c.doubling(top)) return first_ring;
  const double ad = c.doubling(0), bd = c.doubling(1) - ad;
  if (b2 >= bd) return 0;  // 2D's line is steeper and wins at the top: it wins below too
  return crossing(ad, bd, a2, b2, 0);
}

TwoDChoice chooseTwoD(const Config& config, const Topology& topo, int group, const CostModel& model) {
  TwoDChoice c;
  c.mode = config.two_d;
  c.by_request = twoDByRequest(config);
  std::ostringstream why;
  why << topo.cross_size << " host(s), " << (topo.homogeneous ? std::to_string(topo.local_size) : "unequal")
      << " rank(s) per host: ";
  if (group == 0) {
    if (config.two_d == TwoDMode::kOff) {
      why << "LIGHT_2D_ALLREDUCE=0";
    } else if (topo.cross_size < 2) {
      why << "one host (shared memory does it all)";
    } else if (!topo.homogeneous && config.intra_size <= 0) {
      why << "unequal ranks per host (2D needs equal groups; LIGHT_INTRA_SIZE sets one)";
    } else {
      why << "no groups of 2+ ranks on one host (one rank per host: 2D is the flat ring)";
    }
    c.reason = why.str();
    return c;
  }
  c.group = group;
  if (config.two_d == TwoDMode::kOn) {
    c.from_bytes = 0;
    c.allgather_from_bytes = 0;
    c.reducescatter_from_bytes = 0;
    why << "LIGHT_2D_ALLREDUCE=1, groups of " << group << ", every size (allgather and reducescatter too)";
    c.reason = why.str();
    return c;
  }
  TwoDCosts costs;
  costs.shm = model.shm;
  costs.net = model.net;
  costs.group = group;
  costs.hosts = topo.size / group;
  costs.rd_max_bytes = config.links.force_ring ? 0 : config.links.rd_allreduce_bytes;
  costs.leaders = config.links.rd_leaders;
  c.from_bytes = twoDCrossoverBytes(costs);
  c.allgather_from_bytes = twoDAllgatherCrossoverBytes(costs);
  c.reducescatter_from_bytes = twoDReducescatterCrossoverBytes(costs);
  why.precision(3);
  why << "groups of " << group << "; model per byte: flat ring " << (costs.ring(1) - costs.ring(0)) * 1e9
      << " ns, 2D " << (costs.twoD(1) - costs.twoD(0)) * 1e9 << " ns";
  if (c.from_bytes == kTwoDNever) {
    why << ": 2D never predicted faster, flat";
  } else {
    why << ": 2D from " << c.from_bytes << " bytes (crossover)";
  }
  if (c.allgather_from_bytes == kTwoDNever) {
    why << "; allgather flat";
  } else {
    why << "; allgather 2D from " << c.allgather_from_bytes << " gathered bytes";
  }
  if (c.reducescatter_from_bytes == kTwoDNever) {
    why << "; reducescatter flat";
  } else {
    why << "; reducescatter 2D from " << c.reducescatter_from_bytes << " input bytes";
  }
  c.reason = why.str();
  return c;
}

}  // namespace lightcc
