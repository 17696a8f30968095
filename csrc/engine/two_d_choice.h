// Two-D choice: whether allreduces, allgathers and reducescatters go hierarchical (2D) — groups at init, sizes by the cost model.
//
// Pure functions of the config, the topology and the probed alpha-beta fits, so every rank (which
// sees the same hosts and receives rank 0's fits) decides alike, and tests/cpp/two_d_choice_test.cc
// checks them without ranks. Two decisions:
//  * at init, twoDGroupSize(): whether the 2D communicators are built at all (mesh.cc builds them,
//    net_peers.cc connects their cross ring); symmetric because it reads only shared facts;
//  * per batch, chooseTwoD()'s from_bytes: dense allreduces of at least that many bytes take 2D;
//    its allgather_from_bytes: host allgathers whose gathered output is at least that large do;
//    its reducescatter_from_bytes: host reducescatters whose input is at least that large do.
// LIGHT_2D_ALLREDUCE=1 forces 2D for every size (and top-k and Adasum take their two-level forms),
// =0 forbids it; auto (unset) builds the groups only where 2D can pay — 2+ hosts with the same 2+
// ranks each — and takes them only from the size where the model predicts 2D no slower than the
// flat schedule (recursive doubling or the leaders' form up to LIGHTCC_RD_ALLREDUCE_BYTES, then the
// ring). Allgathers and reducescatters compare their 2D form with the flat ring alone (there is
// no doubling for them). The formulas are docs/algorithms.md's; the crossovers are logged at init.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "common/config.h"
#include "engine/cost_model.h"
#include "engine/topology.h"

namespace lightcc {

constexpr int64_t kTwoDNever = std::numeric_limits<int64_t>::max();

// Ranks per 2D group, or 0 when no 2D communicators are built. Forced on (or autotune, which
// switches 2D live): LIGHT_INTRA_SIZE, else the ranks per host when every host has as many; auto:
// the same, but only on 2+ hosts with groups of 2+ ranks. Always 0 when forced off. The group
// count must be 2+ and divide the world (mesh.cc still checks each group sits on one host).
int twoDGroupSize(const Config& config, const Topology& topo);

// The engine uses the two-level forms of top-k and Adasum (which compute differently from their
// flat forms) only when asked: LIGHT_2D_ALLREDUCE=1, or autotune's 2D switch when not forced off.
bool twoDByRequest(const Config& config);

// Predicted seconds of one allreduce of m bytes, per schedule, over n hosts of g ranks.
struct TwoDCosts {
  LinkFit shm, net;
  int hosts = 1, group = 1;          // n, g (p = n * g)
  int64_t rd_max_bytes = 0;          // LIGHTCC_RD_ALLREDUCE_BYTES: flat takes doubling up to here
  bool leaders = true;               // LIGHTCC_RD_LEADERS: that doubling runs among host leaders
  double twoD(double m) const;       // 2(g-1)a_s + 2(g-1)/g m b_s + 2(n-1)a_n + 2(n-1)/n m b_n
  double ring(double m) const;       // 2(p-1)a_n + 2(p-1)/p m b_n
  double doubling(double m) const;   // leaders: 2(a_s + m b_s) + rounds(n)(a_n + m b_n); else rounds(p)(...)
  double flat(double m) const;       // what pickAlgorithm runs without 2D: doubling up to rd_max, then ring
  // Allgathers of m gathered bytes (hierAllgather against ringAllgather):
  double allgatherTwoD(double m) const;  // 2(g-1)a_s + (g-1)/g m b_s + (n-1)a_n + (n-1)/n m b_n
  double allgatherRing(double m) const;  // (p-1)a_n + (p-1)/p m b_n
  // Reducescatters of m input bytes per rank (hierReducescatter against ringReducescatter):
  double reducescatterTwoD(double m) const;  // 2(g-1)a_s + (g-1)/g m b_s + (n-1)a_n + (n-1)/n m/g b_n
  double reducescatterRing(double m) const;  // (p-1)a_n + (p-1)/p m b_n
};

// Smallest size from which 2D is predicted no slower than flat at every larger size; kTwoDNever
// when it loses on large tensors (a network as fast as shared memory). A window where 2D wins
// only between two sizes is not taken.
int64_t twoDCrossoverBytes(const TwoDCosts& c);
// The same for allgathers: smallest gathered size from which the 2D allgather is predicted no
// slower than the ring at every larger size, else kTwoDNever. Its per-byte terms are half the
// allreduce's, so it pays wherever the allreduce's 2D does: the engine takes it only where 2D is on.
int64_t twoDAllgatherCrossoverBytes(const TwoDCosts& c);
// The same for reducescatters, by input bytes per rank: the network carries 1/g of the ring's
// bytes in n-1 steps instead of p-1. Logged at init but not yet taken in auto mode (only forced):
// the measured 2D reducescatter did not win at every size the model gives it (docs/tuning.md).
int64_t twoDReducescatterCrossoverBytes(const TwoDCosts& c);

struct TwoDChoice {
  TwoDMode mode = TwoDMode::kAuto;
  int group = 0;                  // ranks per 2D group; 0 = no 2D communicators
  int64_t from_bytes = kTwoDNever;  // dense allreduces of at least this many bytes take 2D
  int64_t allgather_from_bytes = kTwoDNever;  // host allgathers gathering at least this many bytes take 2D
  int64_t reducescatter_from_bytes = kTwoDNever;  // host reducescatters of inputs at least this large take 2D
  bool by_request = false;        // twoDByRequest(): top-k and Adasum may go two-level
  std::string reason;             // the init log line's "why"
  bool on() const { return group > 0 && from_bytes != kTwoDNever; }
};

// The whole decision. `group` is twoDGroupSize() as the mesh built it (0 if it built none);
// `model` the probed fits (read only in auto mode with a group).
TwoDChoice chooseTwoD(const Config& config, const Topology& topo, int group, const CostModel& model);

}  // namespace lightcc
