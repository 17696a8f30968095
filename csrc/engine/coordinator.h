// Coordinator: rank 0's table of submitted requests; validates them and emits responses.
//
// DESIGN. Owned by rank 0's engine thread. Ranks send each uncached request once; a tensor is
// ready when every member of its process set has submitted it (joined ranks count as having
// submitted). Ready tensors become Responses in the order they became ready, so the list every
// rank receives is deterministic. Disagreement (op, dtype, shape, reduce op, root, scales)
// becomes an error Response carrying a message that names the tensor and the ranks.
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
    Clock::time_point first_seen;
    bool warned = false;
  };
  using Key = std::pair<int32_t, std::string>;
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
