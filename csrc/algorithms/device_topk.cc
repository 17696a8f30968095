// Device top-k allreduce: the sparse exchange, and the flat and 2D schedules around it.
#include "algorithms/device_topk.h"

#include <algorithm>
#include <vector>

#include "algorithms/device_allreduce.h"
#include "kernels/topk.h"

namespace lightcc {
namespace {

// One rank's block in the gathered pairs: k uint32 indices, then k values in the wire dtype,
// padded so the next rank's indices stay 4-byte aligned.
size_t blockBytes(size_t k, DataType dtype) { return 4 * k + (dtypeSize(dtype) * k + 3) / 4 * 4; }

// Selects this member's k pairs into s.pairs: indices, then values in `dtype`. float32 values are
// selected in place; 16-bit ones are rounded from a float32 selection, the residual keeping what
// the rounding lost.
Status selectPairs(device::Device& dev, DeviceTopkScratch& s, const DeviceTopkResidual& state, DataType dtype,
                   size_t count, size_t k, const TopkParams& params) {
  auto* idx = static_cast<uint32_t*>(s.pairs->data());
  void* wire = static_cast<char*>(s.pairs->data()) + 4 * k;
  LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &s.workspace, std::max<size_t>(dev.topkWorkspaceBytes(count), 16)));
  if (dtype == DataType::kFloat32) {
    LIGHTCC_RETURN_IF_ERROR(dev.selectTopk(state.residual, count, k, idx, static_cast<float*>(wire),
                                           s.workspace->data(), s.workspace->size()));
    LIGHTCC_RETURN_IF_ERROR(dev.clearSelected(state.residual, idx, k));
  } else {
    LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &s.selected, 4 * k));
    auto* selected = static_cast<float*>(s.selected->data());
    LIGHTCC_RETURN_IF_ERROR(
        dev.selectTopk(state.residual, count, k, idx, selected, s.workspace->data(), s.workspace->size()));
    LIGHTCC_RETURN_IF_ERROR(dev.roundSelected(state.residual, idx, selected, wire, dtype, k));
  }
  if (params.momentum > 0) LIGHTCC_RETURN_IF_ERROR(dev.clearSelected(state.velocity, idx, k));
  return Status::OK();
}

// One sparse exchange over `comm`: out[0, count) (in `dtype`) = sum of every member's top-k of
// residual[0, count) after adding `contrib` (scaled). `state` points at this exchange's part.
Status sparseExchange(device::Device& dev, device::Comm& comm, DeviceTopkScratch& s, const DeviceTopkResidual& state,
                      const void* contrib, DataType dtype, float scale, void* out, size_t count,
                      const TopkParams& params) {
  if (params.momentum > 0) {
    LIGHTCC_RETURN_IF_ERROR(
        dev.momentumCorrect(state.velocity, state.residual, contrib, dtype, count, params.momentum));
  } else {
    LIGHTCC_RETURN_IF_ERROR(dev.accumulateResidual(state.residual, contrib, dtype, count, scale));
  }
  const size_t k = count == 0 ? 0 : kernels::topkK(count, params.density);
  const size_t block = blockBytes(k, dtype);
  const int p = comm.size();
  LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &s.pairs, std::max<size_t>(block, 8)));
  LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &s.gathered, std::max<size_t>(block * p, 8)));
  if (k > 0) LIGHTCC_RETURN_IF_ERROR(selectPairs(dev, s, state, dtype, count, k, params));
  if (!params.error_feedback) LIGHTCC_RETURN_IF_ERROR(dev.zero(state.residual, count * sizeof(float)));
  LIGHTCC_RETURN_IF_ERROR(comm.allGather(s.pairs->data(), s.gathered->data(), block));
  std::vector<const uint32_t*> idx_of(p);
  std::vector<const void*> val_of(p);
  char* all = static_cast<char*>(s.gathered->data());
  for (int j = 0; j < p; ++j) {
    idx_of[j] = reinterpret_cast<const uint32_t*>(all + block * j);
    val_of[j] = all + block * j + 4 * k;
  }
  // Sums accumulate in float32 (bit-identical to the host's scatterAddRanksAny), then round once.
  float* sum = static_cast<float*>(out);
  if (dtype != DataType::kFloat32) {
    LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &s.sum, std::max<size_t>(count * sizeof(float), 4)));
    sum = static_cast<float*>(s.sum->data());
  }
  LIGHTCC_RETURN_IF_ERROR(dev.zero(sum, count * sizeof(float)));
  LIGHTCC_RETURN_IF_ERROR(dev.scatterAddRanks(sum, count, idx_of, val_of, dtype, k));
  if (dtype != DataType::kFloat32) LIGHTCC_RETURN_IF_ERROR(dev.fromFloat(out, sum, count, dtype));
  return Status::OK();
}

DeviceTopkResidual at(const DeviceTopkResidual& state, size_t offset) {
  return {state.residual + offset, state.velocity != nullptr ? state.velocity + offset : nullptr};
}

}  // namespace

Status deviceTopkAllreduce(device::Device& dev, device::Comm& comm, DeviceTopkScratch& scratch,
                           const DeviceTopkResidual& state, const void* in, void* out, size_t count, DataType dtype,
                           const ReduceSpec& spec, const TopkParams& params) {
  LIGHTCC_RETURN_IF_ERROR(
      sparseExchange(dev, comm, scratch, state, in, dtype, static_cast<float>(spec.prescale), out, count, params));
  return deviceFinishScaling(dev, out, count, dtype, spec);
}

Status deviceTwoLevelTopkAllreduce(device::Device& dev, device::Comm& intra, device::Comm& cross,
                                   DeviceTopkScratch& scratch, const DeviceTopkResidual& state, const void* in,
                                   void* out, void* work, size_t count, size_t padded, DataType dtype,
                                   const ReduceSpec& spec, const TopkParams& params) {
  const size_t esize = dtypeSize(dtype);
  const size_t shard = padded / static_cast<size_t>(intra.size());
  char* w = static_cast<char*>(work);
  if (in != work) LIGHTCC_RETURN_IF_ERROR(dev.copy(w, in, count * esize));
  if (padded > count) LIGHTCC_RETURN_IF_ERROR(dev.zero(w + count * esize, (padded - count) * esize));
  if (spec.prescale != 1.0) LIGHTCC_RETURN_IF_ERROR(dev.scale(w, w, count, dtype, spec.prescale));
  LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &scratch.shard, 2 * shard * esize));
  char* group_sum = static_cast<char*>(scratch.shard->data());
  char* reduced = group_sum + shard * esize;
  LIGHTCC_RETURN_IF_ERROR(intra.reduceScatter(w, group_sum, shard, dtype, ReduceOp::kSum));
  const size_t offset = shard * static_cast<size_t>(intra.rank());
  LIGHTCC_RETURN_IF_ERROR(
      sparseExchange(dev, cross, scratch, at(state, offset), group_sum, dtype, 1.0f, reduced, shard, params));
  LIGHTCC_RETURN_IF_ERROR(intra.allGather(reduced, w, shard * esize));
  LIGHTCC_RETURN_IF_ERROR(deviceFinishScaling(dev, w, count, dtype, spec));
  if (out != work) LIGHTCC_RETURN_IF_ERROR(dev.copy(out, w, count * esize));
  return Status::OK();
}

}  // namespace lightcc
