// DirectAllreduce: the step's description of an entry, and the reduction over every rank's input.
#include "engine/direct_allreduce.h"

#include <vector>

#include "engine/executor.h"
#include "engine/tensor_key.h"
#include "kernels/reduce.h"

namespace lightcc {

DirectAllreduce::DirectAllreduce(const shm::HostGroup& host, const Config& config, EngineStats& stats)
    : host_(host), stats_(stats), exchange_(host, config.shm.direct_window_us) {}

Status DirectAllreduce::run(const TensorEntry& e, bool ready, bool* done) {
  *done = false;
  const Request& r = e.request;
  std::lock_guard<std::mutex> lock(mu_);
  if (off_) return Status::OK();
  const bool barrier = r.op == OpType::kBarrier;  // a step with no payload: everyone arrived
  uint64_t count = barrier ? 0 : 1;
  for (int64_t d : r.shape) count *= static_cast<uint64_t>(d);
  const size_t bytes = count * dtypeSize(r.dtype);
  shm::DirectOp op;
  op.name_hash = hashTensorKey(r.process_set_id, r.name);
  op.name_bytes = static_cast<uint32_t>(r.name.size());
  op.op = static_cast<int32_t>(r.op);
  op.dtype = static_cast<int32_t>(r.dtype);
  op.reduce_op = static_cast<int32_t>(r.reduce_op);
  op.process_set_id = r.process_set_id;
  op.count = count;
  op.prescale = r.prescale;
  op.postscale = r.postscale;
  shm::DirectExchange::Outcome outcome;
  Status st = exchange_.step(op, e.input, bytes, ready, r.name, &outcome);
  // Behind the others: their current step may be this very operation.
  if (st.ok() && outcome == shm::DirectExchange::Outcome::kBehind) {
    st = exchange_.step(op, e.input, bytes, ready, r.name, &outcome);
  }
  if (!st.ok()) {
    return st.withContext("rank " + std::to_string(host_.globalRank(host_.localRank())) + ", " +
                          (barrier ? std::string("barrier") : "allreduce of '" + r.name + "'") + " in a direct step");
  }
  if (outcome != shm::DirectExchange::Outcome::kAgreed) {
    stats_.batches.direct_declined.fetch_add(1, std::memory_order_relaxed);
    waited_out_ = outcome == shm::DirectExchange::Outcome::kWaitedOut ? waited_out_ + 1 : 0;
    off_ = waited_out_ >= kMaxWaitedOut;
    return Status::OK();
  }
  waited_out_ = 0;
  if (barrier) {
    exchange_.finish();
    stats_.batches.direct_ops.fetch_add(1, std::memory_order_relaxed);
    *done = true;
    return Status::OK();
  }
  const int p = host_.localSize();
  const void* few[16];
  std::vector<const void*> many(p > 16 ? static_cast<size_t>(p) : 0);
  const void** srcs = p > 16 ? many.data() : few;
  for (int li = 0; li < p; ++li) srcs[li] = li == host_.localRank() ? e.input : exchange_.payload(li);
  // Every rank adds in rank order from the posted copies: bit-identical results everywhere, and
  // to the engine's one-step shared-memory allreduce.
  const ReduceSpec spec = reduceSpecFor(r.dtype, r.reduce_op, r.prescale, r.postscale, p);
  kernels::reduceN(e.output, srcs, p, count, spec.dtype, spec.op, spec.prescale, spec.postscale);
  kernels::divideIntegers(e.output, count, spec.dtype, spec.int_divisor);
  exchange_.finish();
  stats_.batches.direct_ops.fetch_add(1, std::memory_order_relaxed);
  *done = true;
  return Status::OK();
}

}  // namespace lightcc
