// CPU kernels of top-k compressed allreduce: selection, scatter-add, error feedback, momentum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

// Which entries are "the top k" is defined in topk_ops.h: the k largest |v| (NaN above inf),
// ties broken toward lower indices. That set is unique, so selection is deterministic whatever
// the seed and instruction set, and csrc/cuda/topk.cu returns the same entries.
//
// The hot path is Deep Gradient Compression's sampled threshold (topk_select.cc); it ends with an
// exact pass over the survivors, so the sample only decides speed, never the result.
//
// Element counts are limited to kMaxTopkCount (indices are uint32 on the wire); a larger count
// or k > count is a bug in the caller and aborts with a message, as reduceN does.

namespace lightcc::kernels {

constexpr size_t kMaxTopkCount = 0xffffffffu;

// How a selection finished, for statistics (a rising kFallback rate means the sample misleads).
enum class TopkOutcome : int {
  kNone,        // no selection yet
  kAll,         // k == count
  kExact,       // small or forced: exact radix select over the input
  kSurvivors,   // sampled threshold, exact top k among the survivors (the usual case)
  kTiePadding,  // sampled threshold on a tied value (e.g. mostly zeros), padded with ties
  kFallback,    // the sample misled past the retries: exact radix select over the input
};

// Reusable buffers for selectTopk: grown on demand, never shrunk, so steady-state training
// allocates nothing. One per thread; the buffers' contents between calls mean nothing.
struct TopkScratch {
  TopkOutcome outcome = TopkOutcome::kNone;  // of the last call
  int filterPasses = 0;  // full threshold passes over the input in the last call

  std::vector<uint32_t> sampleKeys;
  std::vector<uint32_t> keys;         // magnitude keys of the survivors
  std::vector<uint32_t> aboveIdx, aboveRaw;  // survivors: index and raw bits of the value
  std::vector<uint32_t> tieIdx, tieRaw;      // entries equal to the k-th key (padding)
  std::vector<uint32_t> hist;
};

// k = max(1, ceil(count * density)), capped at count (0 when count is 0).
size_t topkK(size_t count, double density);

// Writes the top k of values[0..count) as k (index, value) pairs, indices strictly ascending,
// values copied bit for bit. Exactly k entries, always: zeros and ties fill up the selection
// when fewer than k entries are non-zero. `seed` places the threshold sample (vary it per step
// so a strided sample never locks onto a tensor's period); it does not change the result.
void selectTopk(const float* values, size_t count, size_t k, uint64_t seed,
                uint32_t* indicesOut, float* valuesOut, TopkScratch& scratch);

// selectTopk for float32, float16 or bfloat16 input. valuesOut holds k values in the INPUT
// dtype (the selected inputs themselves: half the bytes on the wire for 16-bit gradients).
// kInvalidArgument for any other dtype.
Status selectTopkAny(const void* values, DataType dtype, size_t count, size_t k, uint64_t seed,
                     uint32_t* indicesOut, void* valuesOut, TopkScratch& scratch);

// dst[indices[i]] += values[i] for i = 0..k-1, in that order. Indices come from peers, so each
// is checked against count first: kPeerFailure (naming the position and index) leaves dst
// unchanged. Repeated indices are allowed and simply add twice.
Status scatterAdd(float* dst, size_t count, const uint32_t* indices, const float* values,
                  size_t k);

// Every rank's k pairs added into dst in rank order 0..nranks-1 (dst is not cleared first).
// Each element receives its contributions in that fixed order, so every rank that runs this on
// the same gathered pairs ends with the same bits. All indices are checked before any add.
// When every rank's indices ascend (as selectTopk writes them) dst is walked in L2-sized windows
// with all ranks per window; otherwise rank after rank. Both give the same bits.
Status scatterAddRanks(float* dst, size_t count, const uint32_t* const* indices,
                       const float* const* values, int nranks, size_t k);

// The same with values in float32/float16/bfloat16 (as selectTopkAny produces), converted to
// float exactly and accumulated in float. kInvalidArgument for other dtypes.
Status scatterAddRanksAny(float* dst, size_t count, const uint32_t* const* indices,
                          const void* const* values, DataType dtype, int nranks, size_t k);

// Error feedback: residual[i] += scale * grad[i] (no fused multiply-add: same bits on every
// instruction set and on the GPU).
void accumulateResidual(float* residual, const float* grad, size_t count, float scale);
// The same with grad in float32/float16/bfloat16; kInvalidArgument for other dtypes.
Status accumulateResidualAny(float* residual, const void* grad, DataType dtype, size_t count,
                             float scale);

// residual[indices[i]] = 0: what was sent leaves the residual. For DGC momentum correction call
// it on both u and v (momentum factor masking).
void clearSelected(float* residual, const uint32_t* indices, size_t k);

// DGC momentum correction: u = momentum * u + grad; v = v + u, element-wise.
void momentumCorrect(float* u, float* v, const float* grad, size_t count, float momentum);
// The same with grad in float32/float16/bfloat16; kInvalidArgument for other dtypes.
Status momentumCorrectAny(float* u, float* v, const void* grad, DataType dtype, size_t count,
                          float momentum);

}  // namespace lightcc::kernels
