// NegotiationTree: whom one rank talks to in a negotiation cycle — its host, its host's leader, the leaders.
//
// DESIGN. Pure (no links, no state): built once per Mesh from every rank's host index, the same
// on every rank. The bit vector is AND-reduced in three stages, each reached by a message of the
// one before, so an idle rank is always woken by the first message it gets (no timer):
//   1. host: every rank sends its vector to each rank of its host (shared memory) and ANDs theirs;
//   2. leaders (the lowest rank of each host, only with H > 1 hosts): recursive doubling over the
//      P = 2^floor(log2 H) first hosts; host h >= P first swaps vectors with host h - P ("fold"),
//      waits out the doubling and gets the result from h - P;
//   3. each leader sends the result to its host's other ranks.
// Messages per cycle: (L-1) per rank on a host of L ranks, ceil(log2 H)+1 per leader, L-1 results.
// The slow path (requests up, responses down) uses a binomial tree over the hosts rooted at host
// 0 (whose leader is rank 0, the coordinator); a host's other ranks hang below their leader.
#pragma once

#include <utility>
#include <vector>

namespace lightcc {

struct NegotiationTree {
  // host_of[r] is rank r's host index; hosts are numbered in order of their lowest rank, so host
  // 0 holds rank 0. An empty or mis-sized host_of puts every rank on a host of its own.
  static NegotiationTree build(int rank, int size, const std::vector<int>& host_of);

  int rank = 0;
  std::vector<int> host_of;     // per rank: its host's index, renumbered by lowest rank
  std::vector<int> leaders;     // per host: its leader
  int hosts = 1;                // H
  int host = 0;                 // my host's index
  int leader = 0;               // the lowest rank of my host
  std::vector<int> host_peers;  // the other ranks of my host, ascending
  // Stage 2 (leaders only; empty or -1 with one host).
  int fold_peer = -1;           // the leader I swap with before (and hear from after) the doubling
  bool folded = false;          // my host is >= P: fold_peer sends me the result
  std::vector<int> rounds;      // recursive-doubling partners, one leader per round
  // Slow path: my parent (-1 at rank 0) and children (leaders first, then my host's ranks).
  int parent = -1;
  std::vector<int> children;
  std::vector<std::pair<int, int>> child_hosts;  // per leader child: its subtree's hosts [first, end)

  bool isLeader() const { return rank == leader; }
  // Peers whose first message of a cycle may arrive before this rank starts it (stages 1 and 2).
  std::vector<int> cyclePeers() const;
  // Does rank r belong to the slow-path subtree below my child `child`?
  bool inSubtree(int child, int r) const;
};

}  // namespace lightcc
