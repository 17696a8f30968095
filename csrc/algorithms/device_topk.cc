// Device top-k allreduce: the sparse exchange, and the flat and 2D schedules around it.
#include "algorithms/device_topk.h"

#include <algorithm>
#include <vector>

#include "algorithms/device_allreduce.h"
#include "algorithms/topk_merge_schedule.h"
#include "kernels/topk.h"
#include "kernels/topk_merge.h"

namespace lightcc {
namespace {

// A list of n pairs, as the host executor's (sparse_allreduce.cc) and on the wire: n uint32
// indices, then n values in the wire dtype. Each list has a buffer of its own, so the indices
// start aligned; the unfold's n survivor flag bytes follow the values.
size_t listBytes(size_t n, DataType dtype) { return n * (4 + dtypeSize(dtype)); }

// Selects this member's pairs, segment by segment, into `list` (n = layout.pairs()): indices in
// the batch's index space, then values in the wire dtype. float32 values are selected in place;
// 16-bit ones are rounded from a float32 selection, the residual keeping what the rounding lost.
Status selectPairs(device::Device& dev, DeviceTopkScratch& s, const DeviceTopkResidual& state,
                   const SparseLayout& layout, void* list) {
  const size_t n = layout.pairs();
  const DataType dtype = layout.dtype;
  auto* idx = static_cast<uint32_t*>(list);
  void* wire = static_cast<char*>(list) + 4 * n;
  size_t widest = 0;
  for (const SparseSegment& seg : layout.segments) widest = std::max(widest, seg.count);
  LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &s.workspace, std::max<size_t>(dev.topk().topkWorkspaceBytes(widest), 16)));
  float* selected = static_cast<float*>(wire);
  if (dtype != DataType::kFloat32) {
    LIGHTCC_RETURN_IF_ERROR(device::grow(dev, &s.selected, std::max<size_t>(4 * n, 4)));
    selected = static_cast<float*>(s.selected->data());
  }
  size_t at = 0;
  for (const SparseSegment& seg : layout.segments) {
    if (seg.k == 0) continue;
    LIGHTCC_RETURN_IF_ERROR(dev.topk().selectTopk(state.residual + seg.offset, seg.count, seg.k, idx + at, selected + at,
                                           s.workspace->data(), s.workspace->size()));
    LIGHTCC_RETURN_IF_ERROR(dev.topk().offsetIndices(idx + at, seg.k, static_cast<uint32_t>(seg.offset)));
    at += seg.k;
  }
  if (dtype == DataType::kFloat32) {
    LIGHTCC_RETURN_IF_ERROR(dev.topk().clearSelected(state.residual, idx, n));
  } else {
    LIGHTCC_RETURN_IF_ERROR(dev.topk().roundSelected(state.residual, idx, selected, wire, dtype, n));
  }
  at = 0;
  for (const SparseSegment& seg : layout.segments) {  // momentum factor masking
    if (seg.momentum > 0 && seg.k > 0) LIGHTCC_RETURN_IF_ERROR(dev.topk().clearSelected(state.velocity, idx + at, seg.k));
    at += seg.k;
  }
  return Status::OK();
}

// runTopkMerge's Ops (topk_merge_schedule.h) over a device::Comm, with the device's merge
// kernels; every list and flag array lives in device memory, and nothing waits on the host.
class DeviceMergeOps {
 public:
  // `segments`: where each segment's pairs sit in every list (one per fused tensor or 2D share).
  DeviceMergeOps(device::Device& dev, device::Comm& comm, DeviceTopkScratch& s, size_t n, DataType dtype,
                 std::vector<kernels::MergeSegment> segments)
      : dev_(dev),
        comm_(comm),
        s_(s),
        n_(n),
        dtype_(dtype),
        bytes_(listBytes(n, dtype)),
        segments_(std::move(segments)) {}

  // Grows every buffer; the final message carries a list and n flag bytes.
  Status prepare() {
    for (auto& l : s_.lists) LIGHTCC_RETURN_IF_ERROR(device::grow(dev_, &l, std::max<size_t>(bytes_ + n_, 8)));
    LIGHTCC_RETURN_IF_ERROR(device::grow(dev_, &s_.next, std::max<size_t>(bytes_ + n_, 8)));
    LIGHTCC_RETURN_IF_ERROR(device::grow(dev_, &s_.dropped, std::max<size_t>(2 * n_, 8)));
    LIGHTCC_RETURN_IF_ERROR(device::grow(dev_, &s_.slots, std::max<size_t>(2 * n_ * 12, 8)));
    LIGHTCC_RETURN_IF_ERROR(device::grow(dev_, &s_.pos, std::max<size_t>(n_ * 8, 8)));
    return device::grow(dev_, &s_.workspace, std::max<size_t>(dev_.topk().topkWorkspaceBytes(2 * n_), 16));
  }
  char* list(PairRole r) const { return static_cast<char*>(s_.lists[static_cast<int>(r)]->data()); }
  uint32_t* idx(PairRole r) const { return reinterpret_cast<uint32_t*>(list(r)); }
  char* val(PairRole r) const { return list(r) + 4 * n_; }
  uint8_t* dropped(PairRole r) const {
    return static_cast<uint8_t*>(s_.dropped->data()) + (r == PairRole::kExtra ? n_ : 0);
  }

  Status clearDropped() { return dev_.zero(s_.dropped->data(), 2 * n_); }
  Status start() { return dev_.copy(list(PairRole::kCur), list(PairRole::kMine), bytes_); }
  Status send(int member, PairRole r, const char* what) {
    return comm_.sendRecv(member, list(r), bytes_, nullptr, 0).withContext(std::string(what));
  }
  Status recv(int member, PairRole into, const char* what) {
    return comm_.sendRecv(member, nullptr, 0, list(into), bytes_).withContext(std::string(what));
  }
  Status swap(int member, const char* what) {
    return comm_.sendRecv(member, list(PairRole::kCur), bytes_, list(PairRole::kTheirs), bytes_)
        .withContext(std::string(what));
  }
  // kCur = the top k of the union of kCur and `other`, through the 2n slots.
  Status merge(PairRole other) {
    char* slots = static_cast<char*>(s_.slots->data());
    auto* slot_idx = reinterpret_cast<uint32_t*>(slots);
    auto* slot_val = reinterpret_cast<float*>(slots + 8 * n_);
    auto* slot_rank = reinterpret_cast<float*>(slots + 16 * n_);
    auto* pos = static_cast<uint32_t*>(s_.pos->data());
    auto* picked = reinterpret_cast<float*>(pos + n_);
    LIGHTCC_RETURN_IF_ERROR(dev_.topk().mergeUnion(idx(PairRole::kCur), val(PairRole::kCur), idx(other), val(other), n_,
                                            dtype_, slot_idx, slot_val, slot_rank));
    auto* next = static_cast<char*>(s_.next->data());
    const size_t esize = dtypeSize(dtype_);
    for (const kernels::MergeSegment& seg : segments_) {  // as kernels::mergePairs, a launch at a time
      if (seg.k == 0) continue;
      const size_t at = 2 * seg.at;
      LIGHTCC_RETURN_IF_ERROR(dev_.topk().selectTopk(slot_rank + at, 2 * seg.k, seg.k, pos, picked, s_.workspace->data(),
                                              s_.workspace->size()));
      LIGHTCC_RETURN_IF_ERROR(dev_.topk().gatherSlots(slot_idx + at, slot_val + at, pos, seg.k, dtype_,
                                               reinterpret_cast<uint32_t*>(next) + seg.at,
                                               next + 4 * n_ + seg.at * esize));
    }
    s_.lists[static_cast<int>(PairRole::kCur)].swap(s_.next);
    return Status::OK();
  }
  Status mark(PairRole watched) {
    return dev_.topk().markDropped(idx(PairRole::kCur), n_, idx(watched), n_, dropped(watched));
  }
  Status sendFinal(int member) {
    LIGHTCC_RETURN_IF_ERROR(dev_.copy(list(PairRole::kCur) + bytes_, dropped(PairRole::kExtra), n_));
    return comm_.sendRecv(member, list(PairRole::kCur), bytes_ + n_, nullptr, 0).withContext("top-k unfold");
  }
  Status receiveFinal(int member) {
    LIGHTCC_RETURN_IF_ERROR(
        comm_.sendRecv(member, nullptr, 0, list(PairRole::kCur), bytes_ + n_).withContext("top-k unfold"));
    return dev_.copy(dropped(PairRole::kMine), list(PairRole::kCur) + bytes_, n_);
  }

 private:
  device::Device& dev_;
  device::Comm& comm_;
  DeviceTopkScratch& s_;
  const size_t n_;
  const DataType dtype_;
  const size_t bytes_;
  const std::vector<kernels::MergeSegment> segments_;
};

// One sparse exchange over `comm`: out[0, count) (in `dtype`) = the merged top-k of every
// member's residual[0, count) after adding `contrib` (scaled). `state` points at this exchange's part.
Status sparseExchange(device::Device& dev, device::Comm& comm, DeviceTopkScratch& s, const DeviceTopkResidual& state,
                      const void* contrib, const SparseLayout& layout, float scale, void* out,
                      const TopkParams& params) {
  const DataType dtype = layout.dtype;
  const size_t count = layout.count();
  if (count > kernels::kMaxTopkCount) {
    return Status::InvalidArgument("top-k batch of " + std::to_string(count) + " elements exceeds uint32 indices");
  }
  LIGHTCC_RETURN_IF_ERROR(deviceSparseAccumulate(dev, layout, contrib, scale, state));
  const size_t k = layout.pairs();
  DeviceMergeOps ops(dev, comm, s, k, dtype, layout.mergeSegments());
  LIGHTCC_RETURN_IF_ERROR(ops.prepare());
  if (k > 0) LIGHTCC_RETURN_IF_ERROR(selectPairs(dev, s, state, layout, ops.list(PairRole::kMine)));
  if (!params.error_feedback) LIGHTCC_RETURN_IF_ERROR(dev.zero(state.residual, count * sizeof(float)));
  LIGHTCC_RETURN_IF_ERROR(runTopkMerge(ops, comm.size(), comm.rank()));
  if (params.error_feedback) {
    // What the merges dropped reached no one: it goes back to the residual.
    LIGHTCC_RETURN_IF_ERROR(dev.topk().restoreDropped(state.residual, ops.idx(PairRole::kMine), ops.val(PairRole::kMine),
                                               dtype, ops.dropped(PairRole::kMine), k));
  }
  LIGHTCC_RETURN_IF_ERROR(dev.zero(out, count * dtypeSize(dtype)));
  return dev.topk().placePairs(out, count, dtype, ops.idx(PairRole::kCur), ops.val(PairRole::kCur), k);
}

DeviceTopkResidual at(const DeviceTopkResidual& state, size_t offset) {
  return {state.residual + offset, state.velocity != nullptr ? state.velocity + offset : nullptr};
}

}  // namespace

// Tensors of one fused batch may differ in momentum: each segment accumulates by its own.
Status deviceSparseAccumulate(device::Device& dev, const SparseLayout& layout, const void* contrib, float scale,
                              const DeviceTopkResidual& state) {
  const size_t esize = dtypeSize(layout.dtype);
  for (const SparseSegment& seg : layout.segments) {
    const void* g = static_cast<const char*>(contrib) + seg.offset * esize;
    float* residual = state.residual + seg.offset;
    if (seg.momentum > 0) {
      LIGHTCC_RETURN_IF_ERROR(dev.topk().dgcAccumulate(state.velocity + seg.offset, residual, g, layout.dtype, seg.count,
                                                scale, seg.momentum, seg.nesterov));
    } else {
      LIGHTCC_RETURN_IF_ERROR(dev.topk().accumulateResidual(residual, g, layout.dtype, seg.count, scale));
    }
  }
  return Status::OK();
}

Status deviceTopkAllreduce(device::Device& dev, device::Comm& comm, DeviceTopkScratch& scratch,
                           const DeviceTopkResidual& state, const void* in, void* out, const SparseLayout& layout,
                           const ReduceSpec& spec, const TopkParams& params) {
  LIGHTCC_RETURN_IF_ERROR(
      sparseExchange(dev, comm, scratch, state, in, layout, static_cast<float>(spec.prescale), out, params));
  return deviceFinishScaling(dev, out, layout.count(), layout.dtype, spec);
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
  SparseLayout part;
  part.dtype = dtype;
  part.segments = {{0, shard, shard == 0 ? 0 : kernels::topkK(shard, params.density), params.momentum,
                    params.nesterov}};
  LIGHTCC_RETURN_IF_ERROR(sparseExchange(dev, cross, scratch, at(state, offset), group_sum, part, 1.0f, reduced, params));
  LIGHTCC_RETURN_IF_ERROR(intra.allGather(reduced, w, shard * esize));
  LIGHTCC_RETURN_IF_ERROR(deviceFinishScaling(dev, w, count, dtype, spec));
  if (out != work) LIGHTCC_RETURN_IF_ERROR(dev.copy(out, w, count * esize));
  return Status::OK();
}

}  // namespace lightcc
