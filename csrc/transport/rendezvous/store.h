// Store: the key-value interface init meets through — lightcc's own (StoreClient) or one handed in.
//
// The engine bootstraps through set/get/add/wait only (store_collectives.h, Mesh::connect), so any
// store with those four calls will do: lightcc's authenticated store when lightcc launched the
// job, torch's store when torch.distributed's "lightcc" backend starts the engine
// (bindings/python_store.h). Keys are never deleted; callers pick fresh names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace lightcc {
namespace rendezvous {

class Store {
 public:
  virtual ~Store() = default;

  virtual Status set(const std::string& key, const std::string& value) = 0;
  // Blocks until `key` exists (then fills *value) or timeout_s passes (Status::Timeout naming it).
  virtual Status get(const std::string& key, std::string* value, double timeout_s) = 0;
  // Atomically adds delta to the decimal counter at key (absent = 0); *result is the new value.
  virtual Status add(const std::string& key, int64_t delta, int64_t* result) = 0;
  // Blocks until every key exists, or Status::Timeout naming a missing one.
  virtual Status wait(const std::vector<std::string>& keys, double timeout_s) = 0;
  // Which store this is, for messages ("lightcc's store at host:port", "torch's store ...").
  virtual std::string where() const = 0;
};

}  // namespace rendezvous
}  // namespace lightcc
