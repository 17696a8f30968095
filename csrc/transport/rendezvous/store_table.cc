// The rendezvous server's key-value map, atomic counters and per-key wait lists.
#include "transport/rendezvous/store_table.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <utility>

namespace lightcc {
namespace rendezvous {
namespace {

bool parseInt64(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

}  // namespace

const std::string* StoreTable::find(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

void StoreTable::set(const std::string& key, std::string value, std::vector<uint64_t>* woken) {
  values_[key] = std::move(value);
  auto it = watchers_.find(key);
  if (it == watchers_.end()) return;
  woken->insert(woken->end(), it->second.begin(), it->second.end());
  watchers_.erase(it);
}

Status StoreTable::add(const std::string& key, int64_t delta, int64_t* result,
                       std::vector<uint64_t>* woken) {
  int64_t current = 0;
  if (const std::string* existing = find(key)) {
    if (!parseInt64(*existing, &current)) {
      return Status::InvalidArgument("add on key '" + key + "', whose value is not a decimal " +
                                     "integer (" + std::to_string(existing->size()) + " bytes)");
    }
  }
  if ((delta > 0 && current > std::numeric_limits<int64_t>::max() - delta) ||
      (delta < 0 && current < std::numeric_limits<int64_t>::min() - delta)) {
    return Status::InvalidArgument("add of " + std::to_string(delta) + " to key '" + key +
                                   "' (now " + std::to_string(current) + ") overflows int64");
  }
  *result = current + delta;
  set(key, std::to_string(*result), woken);
  return Status::OK();
}

size_t StoreTable::firstMissing(const std::vector<std::string>& keys, size_t from) const {
  while (from < keys.size() && values_.count(keys[from]) != 0) ++from;
  return from;
}

void StoreTable::watch(const std::string& key, uint64_t session_id) {
  watchers_[key].push_back(session_id);
}

void StoreTable::unwatch(const std::string& key, uint64_t session_id) {
  auto it = watchers_.find(key);
  if (it == watchers_.end()) return;
  auto& ids = it->second;
  ids.erase(std::remove(ids.begin(), ids.end(), session_id), ids.end());
  if (ids.empty()) watchers_.erase(it);
}

}  // namespace rendezvous
}  // namespace lightcc
