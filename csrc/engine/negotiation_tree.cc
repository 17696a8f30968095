// NegotiationTree: the hosts, leaders, doubling partners and slow-path tree, from host indices.
#include "engine/negotiation_tree.h"

#include <algorithm>
#include <map>

namespace lightcc {
namespace {

int lowBit(int h) { return h & -h; }

// The leaders' part: fold partner and recursive-doubling partners (see the header's stage 2).
void buildDoubling(NegotiationTree* t) {
  if (!t->isLeader() || t->hosts < 2) return;
  int p = 1;
  while (p * 2 <= t->hosts) p *= 2;
  if (t->host >= p) {
    t->fold_peer = t->leaders[static_cast<size_t>(t->host - p)];
    t->folded = true;
    return;
  }
  if (t->host + p < t->hosts) t->fold_peer = t->leaders[static_cast<size_t>(t->host + p)];
  for (int bit = 1; bit < p; bit *= 2) t->rounds.push_back(t->leaders[static_cast<size_t>(t->host ^ bit)]);
}

// The slow path's binomial tree over hosts: host h > 0 hangs below h - lowbit(h); its subtree
// is hosts [h, h + lowbit(h)).
void buildSlowTree(NegotiationTree* t) {
  if (!t->isLeader()) {
    t->parent = t->leader;
    return;
  }
  if (t->host > 0) t->parent = t->leaders[static_cast<size_t>(t->host - lowBit(t->host))];
  const int span = t->host == 0 ? t->hosts : lowBit(t->host);
  for (int bit = 1; bit < span && t->host + bit < t->hosts; bit *= 2) {
    const int c = t->host + bit;
    t->children.push_back(t->leaders[static_cast<size_t>(c)]);
    t->child_hosts.emplace_back(c, std::min(c + lowBit(c), t->hosts));
  }
  for (int r : t->host_peers) t->children.push_back(r);
}

}  // namespace

NegotiationTree NegotiationTree::build(int rank, int size, const std::vector<int>& host_of) {
  NegotiationTree t;
  t.rank = rank;
  // Renumber hosts by their lowest rank, so host 0 holds rank 0 whatever ids came in.
  std::map<int, int> index;
  t.host_of.resize(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    const int id = host_of.size() == static_cast<size_t>(size) ? host_of[static_cast<size_t>(r)] : r;
    auto it = index.find(id);
    if (it == index.end()) {
      it = index.emplace(id, static_cast<int>(index.size())).first;
      t.leaders.push_back(r);
    }
    t.host_of[static_cast<size_t>(r)] = it->second;
  }
  t.hosts = static_cast<int>(t.leaders.size());
  t.host = t.host_of[static_cast<size_t>(rank)];
  t.leader = t.leaders[static_cast<size_t>(t.host)];
  for (int r = 0; r < size; ++r) {
    if (r != rank && t.host_of[static_cast<size_t>(r)] == t.host) t.host_peers.push_back(r);
  }
  buildDoubling(&t);
  buildSlowTree(&t);
  return t;
}

std::vector<int> NegotiationTree::cyclePeers() const {
  std::vector<int> peers = host_peers;
  if (fold_peer >= 0) peers.push_back(fold_peer);
  peers.insert(peers.end(), rounds.begin(), rounds.end());
  return peers;
}

bool NegotiationTree::inSubtree(int child, int r) const {
  if (r < 0 || r >= static_cast<int>(host_of.size())) return false;
  for (size_t i = 0; i < child_hosts.size(); ++i) {
    if (children[i] == child) {
      const int h = host_of[static_cast<size_t>(r)];
      return h >= child_hosts[i].first && h < child_hosts[i].second;
    }
  }
  return r == child;  // a rank of my host speaks for itself only
}

}  // namespace lightcc
