// ProcessSets: the registry of process sets (id -> sorted member ranks), read by callers, changed by the engine.
//
// DESIGN. Set 0 is every rank; the sets passed to init get ids 1..n in order; sets added later
// get the next id, which is never reused. Callers read it on every submission (membership,
// validation) while the driving thread adds or removes sets at a fence, so mu_ guards the table.
// A set is only ever added or erased, never changed under its id.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "common/status.h"

namespace lightcc {

class ProcessSets {
 public:
  using Table = std::map<int32_t, std::vector<int>>;
  // Set 0 over `size` ranks and the init-time sets; returns the table (for the mesh to build).
  Table init(int size, const std::vector<std::vector<int>>& extra);
  Table all() const;
  // The next id for `ranks` (sorted here); -1 when that id would reach `limit`.
  int32_t add(std::vector<int> ranks, int32_t limit, std::vector<int>* sorted);
  void remove(int32_t id);
  // OK when `id` is registered and `rank` one of its members; else an error naming both.
  Status checkMember(int32_t id, int rank) const;
  // The members of a registered set, copied (empty when it is not registered).
  std::vector<int> members(int32_t id) const;

 private:
  mutable std::mutex mu_;
  Table sets_;
  int32_t next_id_ = 1;
};

}  // namespace lightcc
