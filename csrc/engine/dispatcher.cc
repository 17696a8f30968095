// Dispatcher: each agreed response — fences and errors here, data batches to the executors.
//
// A process-set change is applied on every rank, whether it was submitted by all of them (on
// set 0, Horovod's API) or only by the ranks concerned (on kMembersOnlySetId, process_sets.h):
// every rank's table then gives the set the same id. Only the submitters hold a handle, found
// under the set id the change was submitted on.
#include "common/logging.h"
#include "engine/dispatcher.h"
#include "engine/op_traits.h"
#include "transport/shm/rank_area.h"

namespace lightcc {
namespace {

// From which size a batch takes 2D where it is on. Allgathers have their own crossover, fixed at
// init; where autotune switches on a 2D the model never chose, every size takes it, as for
// allreduces (tuning.cc). Reducescatters take 2D only when forced (two_d_choice.h).
int64_t twoDFromBytes(const Response& r, const Tuning& tuning) {
  if (r.op == OpType::kReducescatter) return tuning.twoD().reducescatter_from_bytes;
  if (r.op != OpType::kAllgather) return tuning.live().two_d_from_bytes;
  const int64_t from = tuning.twoD().allgather_from_bytes;
  return from == kTwoDNever ? 0 : from;
}

}  // namespace

Status Dispatcher::applyProcessSetChange(const Response& r) {
  const std::string& name = r.names.front();
  const int32_t submitted_on = r.process_set_id;
  if (r.isError()) {
    negotiator_.complete(submitted_on, name, Status::Mismatch(r.error));
    return Status::OK();
  }
  HandleResult result;
  if (r.op == OpType::kAddProcessSet) {
    std::vector<int> ranks;
    const int32_t id = sets_.add(std::vector<int>(r.aux.begin(), r.aux.end()), shm::kMaxProcessSets, &ranks);
    if (id < 0) {
      const std::string limit = std::to_string(shm::kMaxProcessSets);
      negotiator_.complete(submitted_on, name,
                            Status::InvalidArgument("too many process sets created in this job (limit " + limit + ")"));
      return Status::OK();
    }
    mesh_.addSet(id, ranks);
    result.value = id;
  } else {
    const int32_t id = static_cast<int32_t>(r.aux.at(0));
    sets_.remove(id);
    pool_.dropSet(id);
    mesh_.eraseSet(id);
    negotiator_.dropSet(id);
    result.value = 1;
  }
  negotiator_.complete(submitted_on, name, Status::OK(), result);
  return Status::OK();
}

Status Dispatcher::execute(const ResponsePtr& shared) {
  const Response& r = *shared;
  // Every rank counts every response of the agreed plan, member or not, so streams match.
  const uint64_t seq = pool_.nextSequence();
  // The control ops (barrier, join, process-set changes) are the fences.
  const bool fence = !movesData(r.op);
  if (fence && !r.isError()) LIGHTCC_RETURN_IF_ERROR(pool_.drain());
  if (changesSets(r.op)) return applyProcessSetChange(r);
  if (r.op == OpType::kJoin) {
    HandleResult result;
    result.value = r.last_joined;
    negotiator_.joinDone();
    negotiator_.complete(0, r.names.front(), Status::OK(), result);
    return Status::OK();
  }
  auto it = main_.comms.find(r.process_set_id);
  if (it == main_.comms.end() || !it->second.member()) return Status::OK();
  if (r.isError()) {
    for (const auto& n : r.names) negotiator_.complete(r.process_set_id, n, Status::Mismatch(r.error));
    return Status::OK();
  }
  if (r.op == OpType::kBarrier) {
    negotiator_.complete(r.process_set_id, r.names.front(), Status::OK());
    return Status::OK();
  }
  const TuneParams& live = tuning_.live().params;
  Batch b = negotiator_.take(shared);
  b.two_d = live.two_d;
  b.two_d_from_bytes = twoDFromBytes(r, tuning_);
  b.topk_threshold = live.topk_threshold;
  return pool_.run(std::move(b), seq, live.streams);
}

}  // namespace lightcc
