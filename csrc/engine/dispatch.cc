// Dispatch: what the driving thread does with each agreed response — fences and errors itself,
// data collectives through an executor (its own, or a stream's).
//
// Fences — barrier, join, process-set add/remove — first wait for every stream to go idle, so
// they see (and, for barrier, complete after) everything agreed before them.
#include <algorithm>

#include "common/logging.h"
#include "engine/engine.h"
#include "transport/shm/rank_area.h"

namespace lightcc {

Status Engine::applyProcessSetChange(const Response& r) {
  const std::string& name = r.names.front();
  if (r.isError()) {
    negotiator_->complete(0, name, Status::Mismatch(r.error));
    return Status::OK();
  }
  HandleResult result;
  if (r.op == OpType::kAddProcessSet) {
    std::vector<int> ranks(r.aux.begin(), r.aux.end());
    std::sort(ranks.begin(), ranks.end());
    int32_t id;
    {
      std::lock_guard<std::mutex> lock(sets_mu_);
      id = next_set_id_++;
      if (id < shm::kMaxProcessSets) set_ranks_[id] = ranks;
    }
    if (id >= shm::kMaxProcessSets) {
      negotiator_->complete(0, name, Status::InvalidArgument("too many process sets created in this job (limit " +
                                                     std::to_string(shm::kMaxProcessSets) + ")"));
      return Status::OK();
    }
    mesh_->addSet(id, ranks);
    result.value = id;
  } else {
    const int32_t id = static_cast<int32_t>(r.aux.at(0));
    {
      std::lock_guard<std::mutex> lock(sets_mu_);
      set_ranks_.erase(id);
    }
    // Device communicators (built over the set's host ones) and residuals go first; streams
    // are idle at a fence.
    executor_->dropSet(id);
    for (Executor* e : stream_executors_) e->dropSet(id);
    device_topk_.dropSet(id);
    mesh_->eraseSet(id);
    negotiator_->dropSet(id);
    result.value = 1;
  }
  negotiator_->complete(0, name, Status::OK(), result);
  return Status::OK();
}

Status Engine::execute(const ResponsePtr& shared) {
  const Response& r = *shared;
  // Every rank counts every response of the agreed plan, member or not, so streams match.
  const uint64_t seq = streams_ ? streams_->nextSequence() : 0;
  const bool fence = r.op == OpType::kAddProcessSet || r.op == OpType::kRemoveProcessSet ||
                     r.op == OpType::kJoin || r.op == OpType::kBarrier;
  if (fence && streams_ && !r.isError()) LIGHTCC_RETURN_IF_ERROR(streams_->drain());
  if (r.op == OpType::kAddProcessSet || r.op == OpType::kRemoveProcessSet) return applyProcessSetChange(r);
  if (r.op == OpType::kJoin) {
    HandleResult result;
    result.value = r.last_joined;
    negotiator_->joinDone();
    negotiator_->complete(0, r.names.front(), Status::OK(), result);
    return Status::OK();
  }
  auto it = main_->comms.find(r.process_set_id);
  if (it == main_->comms.end() || !it->second.member()) return Status::OK();
  if (r.isError()) {
    for (const auto& n : r.names) negotiator_->complete(r.process_set_id, n, Status::Mismatch(r.error));
    return Status::OK();
  }
  if (r.op == OpType::kBarrier) {
    negotiator_->complete(r.process_set_id, r.names.front(), Status::OK());
    return Status::OK();
  }
  Batch b = negotiator_->take(shared);
  b.two_d = two_d_;
  b.topk_threshold = topk_threshold_bytes_.load(std::memory_order_relaxed);
  if (streams_) {
    // Autotune may use fewer streams than were built; it changes at a cycle boundary on every rank.
    streams_->submit(static_cast<int>(seq % static_cast<uint64_t>(active_streams_)), std::move(b));
    return Status::OK();
  }
  Status st = executor_->run(b);
  if (!st.ok()) executor_->fail(b, st);
  return st;
}

}  // namespace lightcc
