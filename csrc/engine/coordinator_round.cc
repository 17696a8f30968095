// CoordinatorRound: uncached requests go up the negotiation tree to rank 0, responses come down.
//
// Up the tree travels a bundle: per rank [i32 rank][u64 n][n bytes of its RequestList]. A parent
// appends its children's bundles to its own after checking that each names only ranks of that
// child's subtree, once each, so a rank still cannot speak for a rank outside its subtree. Rank
// 0 feeds the requests to the coordinator in rank order (as when every rank sent to it directly)
// and the serialized responses travel back down unchanged; every rank parses the same bytes.
#include "engine/coordinator_round.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "engine/message.h"

namespace lightcc {
namespace {

struct BundleEntry {
  int rank;
  std::string requests;
};

void appendEntry(std::string* bundle, int32_t rank, const std::string& requests) {
  const uint64_t n = requests.size();
  bundle->append(reinterpret_cast<const char*>(&rank), sizeof(rank));
  bundle->append(reinterpret_cast<const char*>(&n), sizeof(n));
  bundle->append(requests);
}

Status parseBundle(const std::string& bytes, int from, std::vector<BundleEntry>* out) {
  size_t at = 0;
  while (at < bytes.size()) {
    int32_t rank = 0;
    uint64_t n = 0;
    if (bytes.size() - at < sizeof(rank) + sizeof(n)) {
      return Status::PeerFailure("rank " + std::to_string(from) + " sent a truncated request bundle");
    }
    std::memcpy(&rank, bytes.data() + at, sizeof(rank));
    std::memcpy(&n, bytes.data() + at + sizeof(rank), sizeof(n));
    at += sizeof(rank) + sizeof(n);
    if (n > bytes.size() - at) {
      return Status::PeerFailure("rank " + std::to_string(from) + " sent a request bundle whose entry for rank " +
                                 std::to_string(rank) + " overruns it");
    }
    out->push_back({rank, bytes.substr(at, n)});
    at += n;
  }
  return Status::OK();
}

}  // namespace

CoordinatorRound::CoordinatorRound(const NegotiationTree& tree, int world_size, Channel& main, Timeline& timeline)
    : tree_(tree), main_(main), timeline_(timeline) {
  if (tree_.rank == 0) {
    coordinator_ = std::make_unique<Coordinator>(world_size, [this](int32_t id) -> const std::vector<int>* {
      auto it = main_.comms.find(id);
      return it == main_.comms.end() ? nullptr : &it->second.ranks;
    });
  }
}

void CoordinatorRound::checkStalls(std::chrono::steady_clock::time_point now, const Config& config, bool* want_cycle) {
  if (!coordinator_) return;
  const DiagnosticsConfig& d = config.diagnostics;
  coordinator_->checkStalls(now, d.stall_check_seconds, d.stall_shutdown_seconds, &stall_responses_);
  if (!stall_responses_.empty()) *want_cycle = true;
}

Status CoordinatorRound::sendBytes(int peer, const std::string& bytes) {
  Link* link = main_.peer(peer);
  uint64_t n = bytes.size();
  std::vector<P2POp> ops = {{link, true, &n, sizeof(n)},
                            {link, true, const_cast<char*>(bytes.data()), bytes.size()}};
  return runP2P(main_.comms.at(0), ops, "negotiation message to rank " + std::to_string(peer));
}

Status CoordinatorRound::recvBytes(int peer, std::string* bytes) {
  Link* link = main_.peer(peer);
  uint64_t n = 0;
  const SetComm& world = main_.comms.at(0);
  std::vector<P2POp> head = {{link, false, &n, sizeof(n)}};
  LIGHTCC_RETURN_IF_ERROR(runP2P(world, head, "negotiation message from rank " + std::to_string(peer)));
  if (n > (uint64_t{1} << 32)) {
    return Status::PeerFailure("rank " + std::to_string(peer) + " announced a " + std::to_string(n) +
                               "-byte negotiation message");
  }
  bytes->resize(n);
  std::vector<P2POp> body = {{link, false, bytes->data(), n}};
  return runP2P(world, body, "negotiation message from rank " + std::to_string(peer));
}

// My requests and my children's bundles, each child vouched for as far as its subtree goes.
Status CoordinatorRound::gatherRequests(const std::vector<Request>& mine, std::string* bundle) {
  appendEntry(bundle, tree_.rank, serializeRequests(mine));
  std::set<int> seen{tree_.rank};
  std::vector<BundleEntry> entries;
  for (int child : tree_.children) {
    std::string bytes;
    LIGHTCC_RETURN_IF_ERROR(recvBytes(child, &bytes));
    entries.clear();
    LIGHTCC_RETURN_IF_ERROR(parseBundle(bytes, child, &entries));
    for (const BundleEntry& e : entries) {
      if (!tree_.inSubtree(child, e.rank) || !seen.insert(e.rank).second) {
        return Status::PeerFailure("rank " + std::to_string(child) + " forwarded requests of rank " +
                                   std::to_string(e.rank) + ", which it does not speak for");
      }
    }
    bundle->append(bytes);
  }
  return Status::OK();
}

// Rank 0: every rank's requests, in rank order, through the coordinator.
Status CoordinatorRound::coordinate(const std::string& bundle, std::vector<Response>* made) {
  std::vector<BundleEntry> entries;
  LIGHTCC_RETURN_IF_ERROR(parseBundle(bundle, 0, &entries));
  std::sort(entries.begin(), entries.end(), [](const BundleEntry& a, const BundleEntry& b) { return a.rank < b.rank; });
  const auto now = std::chrono::steady_clock::now();
  *made = std::move(stall_responses_);
  stall_responses_.clear();
  for (const BundleEntry& e : entries) {
    std::vector<Request> theirs;
    LIGHTCC_RETURN_IF_ERROR(parseRequests(e.requests, e.rank, &theirs));
    for (Request& r : theirs) {
      r.rank = e.rank;  // a rank speaks only for itself
      timeline_.instant(r.name, std::to_string(e.rank));
      coordinator_->add(r, now, made);
    }
  }
  return Status::OK();
}

Status CoordinatorRound::run(const std::vector<Request>& mine, std::vector<ResponsePtr>* responses) {
  std::string bundle, out;
  LIGHTCC_RETURN_IF_ERROR(gatherRequests(mine, &bundle));
  std::vector<Response> made;
  if (tree_.parent >= 0) {
    LIGHTCC_RETURN_IF_ERROR(sendBytes(tree_.parent, bundle));
    LIGHTCC_RETURN_IF_ERROR(recvBytes(tree_.parent, &out));
    LIGHTCC_RETURN_IF_ERROR(parseResponses(out, tree_.parent, &made));
  } else {
    LIGHTCC_RETURN_IF_ERROR(coordinate(bundle, &made));
    out = serializeResponses(made);
  }
  for (int child : tree_.children) LIGHTCC_RETURN_IF_ERROR(sendBytes(child, out));
  for (Response& r : made) responses->push_back(std::make_shared<const Response>(std::move(r)));
  return Status::OK();
}

}  // namespace lightcc
