// 2D allreduce and top-k allreduce: shared-memory phases around a cross-group step.
#include "algorithms/hierarchical.h"

#include <cstring>

#include "kernels/reduce.h"
#include "kernels/topk_train.h"

namespace lightcc {
namespace {

// Splits a spec so the group reduces with the prescale and the last stage applies the rest.
void splitSpec(const ReduceSpec& spec, ReduceSpec* first, ReduceSpec* last) {
  *first = spec;
  first->postscale = 1.0;
  first->int_divisor = 1;
  *last = spec;
  last->prescale = 1.0;
}

// Exchanges this member's top-k selection of residual[0, count) (after adding `contrib`) with
// every member of `comm` and writes the sum of all selections into out[0, count).
// `staging_busy`: called from inside a shared-memory phase whose data sits in the staging areas,
// so the exchange must go over links even between ranks of one host.
Status sparseExchange(SetComm& comm, const float* contrib, float contrib_scale, float* out, size_t count,
                      size_t offset, const TopkParams& params, TopkTensorState& st, kernels::TopkScratch& scratch,
                      bool staging_busy) {
  float* residual = st.residual.data() + offset;
  if (params.momentum > 0) {  // float32 is always accepted
    (void)kernels::dgcAccumulate(st.velocity.data() + offset, residual, contrib, DataType::kFloat32, count,
                                 contrib_scale, params.momentum, params.nesterov);
  } else {
    kernels::accumulateResidual(residual, contrib, count, contrib_scale);
  }
  const size_t k = count == 0 ? 0 : kernels::topkK(count, params.density);
  const int p = comm.size();
  // One rank's message: k uint32 indices, then k float values.
  std::vector<char> mine(8 * k);
  auto* idx = reinterpret_cast<uint32_t*>(mine.data());
  auto* val = reinterpret_cast<float*>(mine.data() + 4 * k);
  if (k > 0) {
    kernels::selectTopk(residual, count, k, params.seed + offset, idx, val, scratch);
    kernels::clearSelected(residual, idx, k);
    if (params.momentum > 0) kernels::clearSelected(st.velocity.data() + offset, idx, k);
  }
  if (!params.error_feedback) std::memset(residual, 0, count * sizeof(float));
  std::vector<char> all(8 * k * static_cast<size_t>(p));
  if (p > 1) {
    std::vector<size_t> pieces(p, 8 * k);
    LIGHTCC_RETURN_IF_ERROR(comm.all_local && !staging_busy ? shmAllgather(comm, mine.data(), pieces, all.data())
                                                            : ringAllgather(comm, mine.data(), pieces, all.data()));
  } else if (k > 0) {
    std::memcpy(all.data(), mine.data(), mine.size());
  }
  std::vector<const uint32_t*> idx_of(p);
  std::vector<const float*> val_of(p);
  for (int j = 0; j < p; ++j) {
    idx_of[j] = reinterpret_cast<const uint32_t*>(all.data() + 8 * k * j);
    val_of[j] = reinterpret_cast<const float*>(all.data() + 8 * k * j + 4 * k);
  }
  std::memset(out, 0, count * sizeof(float));
  if (k > 0) {
    LIGHTCC_RETURN_IF_ERROR(kernels::scatterAddRanks(out, count, idx_of.data(), val_of.data(), p, k)
                                .withContext("top-k pairs from the process set"));
  }
  return Status::OK();
}

void finish(float* out, size_t count, const ReduceSpec& last) {
  if (last.postscale != 1.0) kernels::scale(out, out, count, DataType::kFloat32, last.postscale);
}

}  // namespace

Status hierAllreduce(HierComm& h, const IoVec& io, const ReduceSpec& spec) {
  if (h.cross.size() == 1) return shmAllreduce(h.intra, io, spec);
  ReduceSpec intra, cross;
  splitSpec(spec, &intra, &cross);
  auto hook = [&](char* share, size_t, size_t n) { return ringAllreduce(h.cross, share, n, cross); };
  return shmAllreduce(h.intra, io, intra, hook);
}

Status topkAllreduce(SetComm& comm, const float* in, float* out, size_t count, const ReduceSpec& spec,
                     const TopkParams& params, TopkTensorState& state, kernels::TopkScratch& scratch) {
  LIGHTCC_RETURN_IF_ERROR(sparseExchange(comm, in, static_cast<float>(spec.prescale), out, count, 0, params,
                                         state, scratch, false));
  finish(out, count, spec);
  return Status::OK();
}

Status hierTopkAllreduce(HierComm& h, const float* in, float* out, size_t count, const ReduceSpec& spec,
                         const TopkParams& params, TopkTensorState& state, kernels::TopkScratch& scratch) {
  if (h.cross.size() == 1) return topkAllreduce(h.intra, in, out, count, spec, params, state, scratch);
  ReduceSpec intra, cross;
  splitSpec(spec, &intra, &cross);
  IoVec io;
  io.add(in, out, count * sizeof(float));
  std::vector<float> group_sum;
  auto hook = [&](char* share, size_t offset, size_t n) -> Status {
    auto* s = reinterpret_cast<float*>(share);
    group_sum.assign(s, s + n);
    LIGHTCC_RETURN_IF_ERROR(
        sparseExchange(h.cross, group_sum.data(), 1.0f, s, n, offset, params, state, scratch, true));
    finish(s, n, cross);
    return Status::OK();
  };
  return shmAllreduce(h.intra, io, intra, hook);
}

}  // namespace lightcc
