// ProcessSets: the registry of process sets (id -> sorted member ranks), read by callers, changed by the engine.
//
// DESIGN. Set 0 is every rank; the sets passed to init get ids 1..n in order; sets added later
// get the next id, which is never reused. Callers read it on every submission (membership,
// validation) while the driving thread adds or removes sets at a fence, so mu_ guards the table.
// A set is only ever added or erased, never changed under its id.
//
// Member-only changes. Horovod's add/remove_process_set is submitted by every rank (on set 0).
// torch's new_group calls a backend only on the new group's members, so a change may instead be
// submitted on kMembersOnlySetId, which is no set but says "only the ranks concerned submit
// this": for an add the ranks listed in its aux, for a remove the members of the set it removes.
// The coordinator waits for those ranks only; the response still reaches and changes every
// rank's table (responses are global and ordered), so every rank gives the set the same id.
// Submitting on it is open to every rank of the job (checkMember), validated against the whole
// job (members), and needs no HOROVOD_DYNAMIC_PROCESS_SETS (validate.cc says why).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "common/status.h"

namespace lightcc {

// The process_set_id a member-only add or remove is submitted on (see the DESIGN note above).
// Never a registered id: registered ids count up from 0. Python mirrors it in
// lightcc/common/process_sets.py (MEMBERS_ONLY_SET_ID).
constexpr int32_t kMembersOnlySetId = -1;

class ProcessSets {
 public:
  using Table = std::map<int32_t, std::vector<int>>;
  // Set 0 over `size` ranks and the init-time sets; returns the table (for the mesh to build).
  Table init(int size, const std::vector<std::vector<int>>& extra);
  Table all() const;
  // The next id for `ranks` (sorted here); -1 when that id would reach `limit`.
  int32_t add(std::vector<int> ranks, int32_t limit, std::vector<int>* sorted);
  void remove(int32_t id);
  // OK when `id` is registered and `rank` one of its members, or `id` is kMembersOnlySetId;
  // else an error naming both.
  Status checkMember(int32_t id, int rank) const;
  // The members of a registered set, copied (empty when it is not registered); for
  // kMembersOnlySetId every rank of the job, the ranks a member-only change may name.
  std::vector<int> members(int32_t id) const;

 private:
  mutable std::mutex mu_;
  Table sets_;
  int32_t next_id_ = 1;
};

}  // namespace lightcc
