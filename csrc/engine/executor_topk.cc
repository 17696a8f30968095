// HostExecutor's top-k path: a batch's per-tensor residuals laid end to end, sparse or dense, the exchange.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "algorithms/hierarchical.h"
#include "algorithms/sparse_allreduce.h"
#include "algorithms/topk_schedule.h"
#include "engine/cost_model.h"
#include "engine/executor.h"
#include "engine/fusion.h"
#include "kernels/reduce.h"
#include "kernels/topk_ops.h"

namespace lightcc {
namespace {

// A batch's tensors end to end in one index space. With one tensor the exchange works in the
// caller's buffers and the tensor's own residual; with several (a fused batch) in copies, each
// tensor's state staying in its own TopkStore entry between steps.
class TopkBatch {
 public:
  // `prescale`: the batch's own (clipping measures what would be accumulated).
  // `data` and `staging`: the channel's buffers, which a fused batch is packed into.
  TopkBatch(const Batch& b, const Config& config, TopkStore& store, int rank, double prescale,
            std::vector<char>& data, TopkStaging& staging)
      : b_(b), data_(data), staging_(staging) {
    const Response& r = *b.response;
    layout_.dtype = r.dtype;
    size_t offset = 0;
    for (size_t i = 0; i < r.names.size(); ++i) {
      TopkStore::Entry& e = store.entry(r.process_set_id, r.names[i]);
      locks_.emplace_back(e.mu);  // held across the exchange: a tensor is in flight at most once
      TopkTensorState& st = e.state;
      const size_t count = static_cast<size_t>(tensorBytes(r, i)) / dtypeSize(r.dtype);
      const TopkStep step = topkStepFor(config, st.steps, rank, e.options);
      ++st.steps;
      if (st.residual.size() != count) st.residual.assign(count, 0.0f);
      if (step.params.momentum > 0 && st.velocity.size() != count) st.velocity.assign(count, 0.0f);
      e.train.applied_momentum = step.params.momentum;
      momentum_ = momentum_ || step.params.momentum > 0;
      // Local clipping measures float32 gradients; 16-bit ones are accumulated unclipped.
      const TensorEntry* in = b.entry(i);
      clips_.push_back(in != nullptr && r.dtype == DataType::kFloat32
                           ? topkClipScale(config, e.train, static_cast<const float*>(in->input), count, prescale)
                           : 1.0);
      dense_ = dense_ || step.dense;
      if (i == 0) params_ = step.params;
      layout_.segments.push_back({offset, count, count == 0 ? 0 : kernels::topkK(count, step.params.density),
                                  step.params.momentum, step.params.nesterov});
      offset += count;
      states_.push_back(&st);
    }
  }

  const SparseLayout& layout() const { return layout_; }
  const TopkParams& params() const { return params_; }
  bool warmupDense() const { return dense_; }
  bool momentum() const { return momentum_; }
  bool clipped() const {
    for (double c : clips_) {
      if (c != 1.0) return true;
    }
    return false;
  }
  // The clipping factor the caller folds into its prescale: a lone tensor's (a fused batch's
  // are applied to its packed copy by stage()).
  double loneClip() const { return b_.entries.size() == 1 ? clips_.front() : 1.0; }

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

    // Grown, never shrunk: every byte of [0, count) is written below before the exchange reads it.
    std::vector<char>& data = data_;
    std::vector<float>& residual = staging_.residual;
    std::vector<float>& velocity = staging_.velocity;
    if (data.size() < count * esize) data.resize(count * esize);
    if (residual.size() < count) residual.resize(count);
    if (momentum_ && velocity.size() < count) velocity.resize(count);
    for (size_t i = 0; i < states_.size(); ++i) {
      const SparseSegment& s = layout_.segments[i];
      char* at = &data[s.offset * esize];
      if (const TensorEntry* e = b_.entry(i)) {
        std::memcpy(at, e->input, s.count * esize);
        if (clips_[i] != 1.0) kernels::scale(at, at, s.count, layout_.dtype, clips_[i]);
      } else {
        std::memset(at, 0, s.count * esize);  // a joined rank's tensors contribute zeros
      }
      std::memcpy(&residual[s.offset], states_[i]->residual.data(), s.count * sizeof(float));
      if (momentum_) {
        float* v = &velocity[s.offset];
        if (states_[i]->velocity.empty()) {
          std::fill(v, v + s.count, 0.0f);
        } else {
          std::memcpy(v, states_[i]->velocity.data(), s.count * sizeof(float));
        }
      }
    }
    staged_ = true;
    *in = *out = data.data();
    *state = {residual.data(), momentum_ ? velocity.data() : nullptr};
  }

  // Copies results and state back to the tensors (a fused batch only).
  void unstage() {
    if (!staged_) return;
    const size_t esize = dtypeSize(layout_.dtype);
    for (size_t i = 0; i < states_.size(); ++i) {
      const SparseSegment& s = layout_.segments[i];
      if (const TensorEntry* e = b_.entry(i)) std::memcpy(e->output, &data_[s.offset * esize], s.count * esize);
      std::memcpy(states_[i]->residual.data(), &staging_.residual[s.offset], s.count * sizeof(float));
      if (momentum_ && !states_[i]->velocity.empty()) {
        std::memcpy(states_[i]->velocity.data(), &staging_.velocity[s.offset], s.count * sizeof(float));
      }
    }
  }

 private:
  const Batch& b_;
  SparseLayout layout_;
  TopkParams params_;
  bool dense_ = false;
  bool momentum_ = false;        // some tensor has DGC momentum correction this step
  std::vector<double> clips_;    // per tensor, local clipping's factor (1: none)
  std::vector<std::unique_lock<std::mutex>> locks_;
  std::vector<TopkTensorState*> states_;
  std::vector<char>& data_;  // the channel's fusion buffer: a fused batch's inputs, then outputs
  TopkStaging& staging_;     // the channel's: a fused batch's residuals and velocities
  bool staged_ = false;
};

template <class S>
void storeAll(S* dst, const float* src, size_t count) {
  for (size_t i = 0; i < count; ++i) kernels::storeWire(src[i], &dst[i]);
}

// A dense step of a batch whose tensors carry training state (momentum correction, clipping):
// every contribution joins its residual (through the velocity where declared) and the residuals
// go out whole, so a dense step is exactly momentum SGD; the residuals empty, velocities stay.
Status denseFromResiduals(TopkBatch& batch, SetComm& comm, HierComm* hier, const ReduceSpec& spec) {
  const SparseLayout& layout = batch.layout();
  const size_t count = layout.count();
  const void* in = nullptr;
  void* out = nullptr;
  SparseState state;
  batch.stage(&in, &out, &state);
  LIGHTCC_RETURN_IF_ERROR(sparseAccumulate(layout, in, static_cast<float>(spec.prescale), state));
  std::vector<float> sum(state.residual, state.residual + count);
  std::fill(state.residual, state.residual + count, 0.0f);
  ReduceSpec dense{DataType::kFloat32, spec.op, 1.0, spec.postscale};
  IoVec io;
  io.add(sum.data(), sum.data(), count * sizeof(float));
  Status st = hier != nullptr       ? hierAllreduce(*hier, io, dense)
              : comm.size() == 1    ? Status::OK()
              : comm.all_local      ? shmAllreduce(comm, io, dense)
                                    : ringAllreduce(comm, sum.data(), count, dense);
  if (comm.size() == 1 && dense.postscale != 1.0) kernels::scale(sum.data(), sum.data(), count, dense.dtype, dense.postscale);
  LIGHTCC_RETURN_IF_ERROR(st);
  switch (layout.dtype) {
    case DataType::kFloat16: storeAll(static_cast<kernels::Half*>(out), sum.data(), count); break;
    case DataType::kBFloat16: storeAll(static_cast<kernels::BFloat16*>(out), sum.data(), count); break;
    case DataType::kFloat32: std::memcpy(out, sum.data(), count * sizeof(float)); break;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kBool:
      return Status::Internal(std::string("top-k dense fallback cannot store ") + dtypeName(layout.dtype));
  }
  batch.unstage();
  return Status::OK();
}

}  // namespace

bool topkEligible(const Response& r, const Config& config, int64_t threshold_bytes) {
  if (!config.topk.enabled || r.op != OpType::kAllreduce || r.isError()) return false;
  if (r.reduce_op != ReduceOp::kSum && r.reduce_op != ReduceOp::kAverage) return false;
  // float32, float16 and bfloat16; both executors compress fused batches, a segment a tensor.
  if (!sparseDtype(r.dtype)) return false;
  for (size_t i = 0; i < r.names.size(); ++i) {
    if (tensorBytes(r, i) < threshold_bytes) return false;
    // Vectors (biases, norm scales) stay dense: few elements, each of them matters (DGC).
    if (i < r.shapes.size() && static_cast<int64_t>(r.shapes[i].size()) < config.topk.min_dims) return false;
  }
  return !r.names.empty();
}

int topkFusionClass(const Response& r, const Config& config, int64_t threshold_bytes) {
  if (!topkEligible(r, config, threshold_bytes)) return 0;
  return 1;
}

Status HostExecutor::topk(Batch& b, SetComm& comm, Algorithm algo) {
  const Response& r = *b.response;
  const bool two_level = algo == Algorithm::kTwoLevelTopk;
  HierComm* hier = two_level ? &channel_.hier.at(r.process_set_id) : nullptr;
  ReduceSpec spec = reduceSpecFor(r, comm.size());
  TopkBatch batch(b, *env_.config, *env_.topk, env_.rank, spec.prescale, channel_.fusion_buffer,
                  channel_.topk_staging);
  spec.prescale *= batch.loneClip();
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
    if (!batch.warmupDense() && env_.stats != nullptr) env_.stats->batches.topk_dense_batches.fetch_add(1);
    if (!batch.momentum() && !batch.clipped()) return allreduce(b, comm, dense);
    LIGHTCC_RETURN_IF_ERROR(denseFromResiduals(batch, comm, hier, spec)
                                .withContext("rank " + std::to_string(env_.rank) + ": dense top-k step of '" +
                                             r.names.front() + "'"));
    for (size_t i = 0; i < r.names.size(); ++i) complete(b, i, Status::OK());
    return Status::OK();
  }
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
  if (env_.stats != nullptr) env_.stats->batches.topk_batches.fetch_add(1);
  for (size_t i = 0; i < r.names.size(); ++i) complete(b, i, Status::OK());
  return Status::OK();
}

}  // namespace lightcc
