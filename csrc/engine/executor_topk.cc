// HostExecutor's top-k path: a batch's per-tensor residuals laid end to end, sparse or dense, the exchange.
#include <cstring>
#include <memory>
#include <mutex>

#include "algorithms/sparse_allreduce.h"
#include "algorithms/topk_schedule.h"
#include "engine/cost_model.h"
#include "engine/executor.h"
#include "engine/fusion.h"
#include "kernels/reduce.h"

namespace lightcc {
namespace {

// A batch's tensors end to end in one index space. With one tensor the exchange works in the
// caller's buffers and the tensor's own residual; with several (a fused batch) in copies, each
// tensor's state staying in its own TopkStore entry between steps.
class TopkBatch {
 public:
  TopkBatch(const Batch& b, const Config& config, TopkStore& store, int rank) : b_(b) {
    const Response& r = *b.response;
    layout_.dtype = r.dtype;
    size_t offset = 0;
    for (size_t i = 0; i < r.names.size(); ++i) {
      TopkStore::Entry& e = store.entry(r.process_set_id, r.names[i]);
      locks_.emplace_back(e.mu);  // held across the exchange: a tensor is in flight at most once
      TopkTensorState& st = e.state;
      const size_t count = static_cast<size_t>(tensorBytes(r, i)) / dtypeSize(r.dtype);
      if (st.residual.size() != count) {
        st.residual.assign(count, 0.0f);
        st.velocity.assign(config.topk_momentum > 0 ? count : 0, 0.0f);
      }
      const TopkStep step = topkStepFor(config, st.steps, rank);
      ++st.steps;
      dense_ = dense_ || step.dense;
      if (i == 0) params_ = step.params;
      layout_.segments.push_back({offset, count, count == 0 ? 0 : kernels::topkK(count, step.params.density)});
      offset += count;
      states_.push_back(&st);
    }
  }

  const SparseLayout& layout() const { return layout_; }
  const TopkParams& params() const { return params_; }
  bool warmupDense() const { return dense_; }

  // Points the exchange at contiguous input, output and state (packing a fused batch).
  void stage(const void** in, void** out, SparseState* state) {
    const size_t esize = dtypeSize(layout_.dtype), count = layout_.count();
    const TensorEntry* only = b_.entries.size() == 1 ? b_.entry(0) : nullptr;
    if (only != nullptr) {
      *in = only->input;
      *out = only->output;
      *state = {states_[0]->residual.data(), states_[0]->velocity.empty() ? nullptr : states_[0]->velocity.data()};
      return;
    }
    data_.assign(count * esize, 0);  // a joined rank's tensors contribute zeros
    residual_.resize(count);
    velocity_.resize(params_.momentum > 0 ? count : 0);
    for (size_t i = 0; i < states_.size(); ++i) {
      const SparseSegment& s = layout_.segments[i];
      if (const TensorEntry* e = b_.entry(i)) std::memcpy(&data_[s.offset * esize], e->input, s.count * esize);
      std::memcpy(&residual_[s.offset], states_[i]->residual.data(), s.count * sizeof(float));
      if (!velocity_.empty()) std::memcpy(&velocity_[s.offset], states_[i]->velocity.data(), s.count * sizeof(float));
    }
    *in = *out = data_.data();
    *state = {residual_.data(), velocity_.empty() ? nullptr : velocity_.data()};
  }

  // Copies results and state back to the tensors (a fused batch only).
  void unstage() {
    if (data_.empty() && residual_.empty()) return;
    const size_t esize = dtypeSize(layout_.dtype);
    for (size_t i = 0; i < states_.size(); ++i) {
      const SparseSegment& s = layout_.segments[i];
      if (const TensorEntry* e = b_.entry(i)) std::memcpy(e->output, &data_[s.offset * esize], s.count * esize);
      std::memcpy(states_[i]->residual.data(), &residual_[s.offset], s.count * sizeof(float));
      if (!velocity_.empty()) std::memcpy(states_[i]->velocity.data(), &velocity_[s.offset], s.count * sizeof(float));
    }
  }

 private:
  const Batch& b_;
  SparseLayout layout_;
  TopkParams params_;
  bool dense_ = false;
  std::vector<std::unique_lock<std::mutex>> locks_;
  std::vector<TopkTensorState*> states_;
  std::vector<char> data_;
  std::vector<float> residual_, velocity_;
};

}  // namespace

bool topkEligible(const Response& r, const Config& config, int64_t threshold_bytes) {
  if (!config.topk_allreduce || r.op != OpType::kAllreduce || r.isError()) return false;
  if (r.reduce_op != ReduceOp::kSum && r.reduce_op != ReduceOp::kAverage) return false;
  // float32, float16 and bfloat16; the device executor (GPU tensors, or every tensor with
  // LIGHTCC_DEVICE_EXECUTOR=host) compresses one tensor a batch, the host one fused batches.
  const bool device = r.on_device || config.device_executor_on_host;
  if (!sparseDtype(r.dtype) || (device && r.names.size() != 1)) return false;
  for (size_t i = 0; i < r.names.size(); ++i) {
    if (tensorBytes(r, i) < threshold_bytes) return false;
  }
  return !r.names.empty();
}

int topkFusionClass(const Response& r, const Config& config, int64_t threshold_bytes) {
  if (!topkEligible(r, config, threshold_bytes)) return 0;
  return r.on_device || config.device_executor_on_host ? -1 : 1;
}

Status HostExecutor::topk(Batch& b, SetComm& comm, Algorithm algo) {
  const Response& r = *b.response;
  const bool two_level = algo == Algorithm::kTwoLevelTopk;
  HierComm* hier = two_level ? &channel_.hier.at(r.process_set_id) : nullptr;
  TopkBatch batch(b, *env_.config, *env_.topk, env_.rank);
  const SparseLayout& layout = batch.layout();
  const size_t esize = dtypeSize(r.dtype);
  // The exchange whose bytes decide: the flat one, or 2D's cross-group step over one share.
  const int groups = two_level ? hier->cross.size() : comm.size();
  const size_t share = two_level ? layout.count() / static_cast<size_t>(hier->intra.size()) + 1 : layout.count();
  const size_t pairs = two_level ? kernels::topkK(share, batch.params().density) : layout.pairs();
  if (batch.warmupDense() || !sparseMovesFewerBytes(groups, share, esize, pairs)) {
    // Dense this step: the residuals wait, untouched, for the next sparse one.
    const Algorithm dense = comm.size() == 1 ? Algorithm::kSelf
                            : two_level      ? Algorithm::kTwoLevel
                            : comm.all_local ? Algorithm::kSharedMemory
                                             : Algorithm::kLinks;
    if (!batch.warmupDense() && env_.stats != nullptr) env_.stats->topk_dense_batches.fetch_add(1);
    return allreduce(b, comm, dense);
  }
  const ReduceSpec spec = reduceSpecFor(r, comm.size());
  const void* in = nullptr;
  void* out = nullptr;
  SparseState state;
  batch.stage(&in, &out, &state);
  Status st;
  if (two_level) {
    st = hierSparseAllreduce(*hier, layout, in, out, spec, state, batch.params(), channel_.topk_scratch);
  } else {
    st = sparseAllreduce(comm, layout, in, static_cast<float>(spec.prescale), out, state, batch.params(),
                         channel_.topk_scratch);
    if (st.ok() && spec.postscale != 1.0) kernels::scale(out, out, layout.count(), r.dtype, spec.postscale);
  }
  LIGHTCC_RETURN_IF_ERROR(st.withContext("rank " + std::to_string(env_.rank) + ": top-k allreduce of '" +
                                         r.names.front() + "'" +
                                         (r.names.size() > 1 ? " and " + std::to_string(r.names.size() - 1) +
                                                                   " more fused"
                                                             : "")));
  batch.unstage();
  if (env_.stats != nullptr) env_.stats->topk_batches.fetch_add(1);
  for (size_t i = 0; i < r.names.size(); ++i) complete(b, i, Status::OK());
  return Status::OK();
}

}  // namespace lightcc
