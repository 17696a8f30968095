// ProcessSets: registering, removing and looking up process sets under one lock.
#include "engine/process_sets.h"

#include <algorithm>
#include <string>

namespace lightcc {

ProcessSets::Table ProcessSets::init(int size, const std::vector<std::vector<int>>& extra) {
  std::vector<int> everyone(size);
  for (int r = 0; r < size; ++r) everyone[r] = r;
  std::lock_guard<std::mutex> lock(mu_);
  sets_.clear();
  sets_[0] = everyone;
  next_id_ = 1;
  for (std::vector<int> ranks : extra) {
    std::sort(ranks.begin(), ranks.end());
    sets_[next_id_++] = std::move(ranks);
  }
  return sets_;
}

ProcessSets::Table ProcessSets::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sets_;
}

int32_t ProcessSets::add(std::vector<int> ranks, int32_t limit, std::vector<int>* sorted) {
  std::sort(ranks.begin(), ranks.end());
  std::lock_guard<std::mutex> lock(mu_);
  // The id is spent even past the limit, as every rank counts it the same way.
  const int32_t id = next_id_++;
  if (id >= limit) return -1;
  sets_[id] = ranks;
  *sorted = std::move(ranks);
  return id;
}

void ProcessSets::remove(int32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  sets_.erase(id);
}

Status ProcessSets::checkMember(int32_t id, int rank) const {
  // Whether this rank belongs among a member-only change's ranks is validate.cc's check (add)
  // or the coordinator's (remove): neither is a registered set's membership.
  if (id == kMembersOnlySetId) return Status::OK();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id);
  if (it == sets_.end()) {
    return Status::InvalidArgument("process set " + std::to_string(id) + " is not registered (was it removed?)");
  }
  if (std::find(it->second.begin(), it->second.end(), rank) == it->second.end()) {
    return Status::InvalidArgument("rank " + std::to_string(rank) + " is not a member of process set " +
                                   std::to_string(id));
  }
  return Status::OK();
}

std::vector<int> ProcessSets::members(int32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sets_.find(id == kMembersOnlySetId ? 0 : id);
  return it == sets_.end() ? std::vector<int>{} : it->second;
}

}  // namespace lightcc
