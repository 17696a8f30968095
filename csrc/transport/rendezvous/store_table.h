// store_table: the rendezvous server's key-value map and which sessions wait on which key.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace lightcc {
namespace rendezvous {

// Owned and used by the server thread only; no locking. A session waits on exactly one key at a
// time (the first of its keys still missing), registered with watch() and removed with unwatch()
// or by the set/add that creates the key.
class StoreTable {
 public:
  // Null when the key does not exist.
  const std::string* find(const std::string& key) const;
  // Stores the value and appends to *woken the sessions that were waiting for this key.
  void set(const std::string& key, std::string value, std::vector<uint64_t>* woken);
  // Adds delta to the decimal counter at key (a missing key counts as 0). A value that is not a
  // decimal int64, or an overflow, is an InvalidArgument naming the key.
  Status add(const std::string& key, int64_t delta, int64_t* result, std::vector<uint64_t>* woken);
  // Index of the first of keys[from..] that does not exist, or keys.size() if all do.
  size_t firstMissing(const std::vector<std::string>& keys, size_t from) const;

  void watch(const std::string& key, uint64_t session_id);
  void unwatch(const std::string& key, uint64_t session_id);

  size_t size() const { return values_.size(); }

 private:
  std::unordered_map<std::string, std::string> values_;
  std::unordered_map<std::string, std::vector<uint64_t>> watchers_;
};

}  // namespace rendezvous
}  // namespace lightcc
