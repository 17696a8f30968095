// Device top-k allreduce: the sparse exchange, and the flat and 2D schedules around it.
#include "algorithms/device_topk.h"

#include <algorithm>
#include <vector>

#include "algorithms/device_allreduce.h"
#include "kernels/topk.h"

namespace lightcc {
namespace {

// One sparse exchange over `comm`: out[0, count) = sum of every member's top-k of
// residual[0, count) after adding `contrib` (scaled). `state` points at this exchange's part.
Status sparseExchange(device::Device& dev, device::Comm& comm, DeviceTopkScratch& s, const DeviceTopkResidual& state,
                      const float* contrib, float scale, float* out, size_t count, const TopkParams& params) {
  if (params.momentum > 0) {
    LIGHTCC_RETURN_IF_ERROR(dev.momentumCorrect(state.velocity, state.residual, contrib, count, params.momentum));
  } else {
    LIGHTCC_RETURN_IF_ERROR(dev.accumulateResidual(state.residual, contrib, count, scale));
  }
  const size_t k = count == 0 ? 0 : kernels::topkK(count, params.density);
  const int p = comm.size();
  LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &s.pairs, std::max<size_t>(8 * k, 8)));
  LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &s.gathered, std::max<size_t>(8 * k * p, 8)));
  auto* idx = static_cast<uint32_t*>(s.pairs->data());
  auto* val = reinterpret_cast<float*>(static_cast<char*>(s.pairs->data()) + 4 * k);
  if (k > 0) {
    LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &s.workspace, std::max<size_t>(dev.topkWorkspaceBytes(count), 16)));
    LIGHTCC_RETURN_IF_ERROR(
        dev.selectTopk(state.residual, count, k, idx, val, s.workspace->data(), s.workspace->size()));
    LIGHTCC_RETURN_IF_ERROR(dev.clearSelected(state.residual, idx, k));
    if (params.momentum > 0) LIGHTCC_RETURN_IF_ERROR(dev.clearSelected(state.velocity, idx, k));
  }
  if (!params.error_feedback) LIGHTCC_RETURN_IF_ERROR(dev.zero(state.residual, count * sizeof(float)));
  LIGHTCC_RETURN_IF_ERROR(comm.allGather(s.pairs->data(), s.gathered->data(), 8 * k));
  std::vector<const uint32_t*> idx_of(p);
  std::vector<const float*> val_of(p);
  char* all = static_cast<char*>(s.gathered->data());
  for (int j = 0; j < p; ++j) {
    idx_of[j] = reinterpret_cast<const uint32_t*>(all + 8 * k * j);
    val_of[j] = reinterpret_cast<const float*>(all + 8 * k * j + 4 * k);
  }
  LIGHTCC_RETURN_IF_ERROR(dev.zero(out, count * sizeof(float)));
  return dev.scatterAddRanks(out, count, idx_of, val_of, k);
}

DeviceTopkResidual at(const DeviceTopkResidual& state, size_t offset) {
  return {state.residual + offset, state.velocity != nullptr ? state.velocity + offset : nullptr};
}

}  // namespace

Status deviceTopkAllreduce(device::Device& dev, device::Comm& comm, DeviceTopkScratch& scratch,
                           const DeviceTopkResidual& state, const float* in, float* out, size_t count,
                           const ReduceSpec& spec, const TopkParams& params) {
  LIGHTCC_RETURN_IF_ERROR(
      sparseExchange(dev, comm, scratch, state, in, static_cast<float>(spec.prescale), out, count, params));
  return deviceFinishScaling(dev, out, count, DataType::kFloat32, spec);
}

Status deviceTwoLevelTopkAllreduce(device::Device& dev, device::Comm& intra, device::Comm& cross,
                                   DeviceTopkScratch& scratch, const DeviceTopkResidual& state, const float* in,
                                   float* out, float* work, size_t count, size_t padded, const ReduceSpec& spec,
                                   const TopkParams& params) {
  const size_t shard = padded / static_cast<size_t>(intra.size());
  if (in != work) LIGHTCC_RETURN_IF_ERROR(dev.copy(work, in, count * sizeof(float)));
  if (padded > count) LIGHTCC_RETURN_IF_ERROR(dev.zero(work + count, (padded - count) * sizeof(float)));
  if (spec.prescale != 1.0) {
    LIGHTCC_RETURN_IF_ERROR(dev.scale(work, work, count, DataType::kFloat32, spec.prescale));
  }
  LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &scratch.shard, 2 * shard * sizeof(float)));
  float* group_sum = static_cast<float*>(scratch.shard->data());
  float* reduced = group_sum + shard;
  LIGHTCC_RETURN_IF_ERROR(intra.reduceScatter(work, group_sum, shard, DataType::kFloat32, ReduceOp::kSum));
  const size_t offset = shard * static_cast<size_t>(intra.rank());
  LIGHTCC_RETURN_IF_ERROR(sparseExchange(dev, cross, scratch, at(state, offset), group_sum, 1.0f, reduced, shard, params));
  LIGHTCC_RETURN_IF_ERROR(intra.allGather(reduced, work, shard * sizeof(float)));
  LIGHTCC_RETURN_IF_ERROR(deviceFinishScaling(dev, work, count, DataType::kFloat32, spec));
  if (out != work) LIGHTCC_RETURN_IF_ERROR(dev.copy(out, work, count * sizeof(float)));
  return Status::OK();
}

}  // namespace lightcc
