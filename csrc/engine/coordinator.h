// Coordinator: rank 0's table of submitted requests; validates them and emits responses.
//
// DESIGN. Owned by rank 0's engine thread. Ranks send each uncached request once; a tensor is
// ready when every member of its process set has submitted it (joined ranks count as having
// submitted). Ready tensors become Responses in the order they became ready, so the list every
// rank receives is deterministic. Disagreement (op, dtype, shape, reduce op, root, scales)
// becomes an error Response carrying a message that names the tensor and the ranks.
//
// Member-only process-set changes (process_sets.h, kMembersOnlySetId) are keyed by that id and
// their name, and wait for their own ranks, not a registered set's: an add for the ranks in its
// aux, a remove for the members of the set it removes. Those ranks are kept in the pending
// entry, since the set of an add does not exist yet. A member whose aux differs from the first
// one's fails the change at once for everyone who submitted it. The response, like every one,
// goes to every rank, which applies it; only the submitters hold a handle to complete.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/request.h"

namespace lightcc {

class Coordinator {
 public:
  using Clock = std::chrono::steady_clock;
  // members(id) returns the ranks of a process set, or null if unknown.
  Coordinator(int world_size, std::function<const std::vector<int>*(int32_t)> members)
      : world_size_(world_size), members_(std::move(members)) {}

  void add(const Request& r, Clock::time_point now, std::vector<Response>* out);
  // Logs tensors waiting longer than warn_s (once each), naming the missing ranks; with
  // fail_s > 0 turns those older than fail_s into error responses.
  void checkStalls(Clock::time_point now, double warn_s, double fail_s, std::vector<Response>* out);
  bool empty() const { return table_.empty(); }
  // Ranks that already arrived for a tensor (for the timeline).
  bool anyJoined() const { return !joined_.empty(); }

 private:
  struct Pending {
    std::vector<std::optional<Request>> by_member;
    std::vector<int> own_members;  // a member-only change's ranks; empty for a registered set's
    Clock::time_point first_seen;
    bool warned = false;
  };
  using Key = std::pair<int32_t, std::string>;
  // The ranks that must submit `key`: the pending entry's own, or its registered set's (null
  // when that set is unknown).
  const std::vector<int>* membersOf(const Key& key, const Pending& p) const;
  // A member-only change (`p`: its pending entry, if any): "" with its ranks in *ranks, or the
  // error that fails it at once.
  std::string membersOnlyRanks(const Request& req, const Pending* p, std::vector<int>* ranks) const;
  bool complete(const Key& key, const Pending& p) const;
  Response build(const Key& key, const Pending& p) const;
  void sweep(std::vector<Response>* out);
  bool isJoined(int rank) const;

  int world_size_;
  std::function<const std::vector<int>*(int32_t)> members_;
  std::map<Key, Pending> table_;
  std::vector<Key> arrival_;  // keys in first-arrival order: the sweep order
  std::vector<int> joined_;   // ranks that joined, in order
};

}  // namespace lightcc
