// Internal: the pieces behind topk.h (per-ISA loops, radix select), for its sources and tests.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "kernels/simd_dispatch.h"
#include "kernels/topk.h"

namespace lightcc::kernels {

// One instruction set's streaming loops (topk_loops.h). `dtype` is float32, float16 or
// bfloat16 (callers check); the arithmetic is topk_ops.h's, so every set gives the same bits.
struct TopkIsaKernels {
  const char* name;
  // Scans values[0..count) in index order and stores i and the raw bits of values[i] for every
  // entry with lo <= magnitudeKey <= hi (lo <= hi <= kMaxKey), at most `cap` of them. Returns
  // how many it stored, or cap + 1 as soon as it meets one more than fits (the scan stops).
  size_t (*filter)(const void* values, DataType dtype, size_t count, uint32_t lo, uint32_t hi,
                   size_t cap, uint32_t* idx, uint32_t* raw);
  // residual[i] = residualStep(residual[i], grad[i], scale).
  void (*residual)(float* residual, const void* grad, DataType dtype, size_t count, float scale);
  // momentumStep(u[i], v[i], grad[i], momentum).
  void (*momentum)(float* u, float* v, const void* grad, DataType dtype, size_t count,
                   float momentum);
};

const TopkIsaKernels& topkKernelsGeneric();
#if defined(__x86_64__)
const TopkIsaKernels& topkKernelsAvx2();
const TopkIsaKernels& topkKernelsAvx512();
#endif

// The loops of one level, or nullptr when this build or CPU lacks it (see simd_dispatch.h).
const TopkIsaKernels* topkKernelsAt(SimdLevel level);
// The best level's loops, chosen once.
const TopkIsaKernels& topkKernels();

// The k-th largest magnitude key of n keys (1 <= k <= n), by topk_ops.h's radix passes:
// `key` is it, `need` how many entries equal to it belong to the top k, `equal` how many equal
// it in all. hist must hold 4 * kRadixBins counters.
struct KthKey {
  uint32_t key;
  uint64_t need;
  uint64_t equal;
};
KthKey kthLargestKey(const uint32_t* keys, size_t n, size_t k, uint32_t* hist);
// The same over values[0..n) of a float32/float16/bfloat16 array, keys computed on the fly.
KthKey kthLargestKeyOf(const void* values, DataType dtype, size_t n, size_t k, uint32_t* hist);

// selectTopkAny on a given instruction set's loops (how tests reach every level), with the
// sampled path forced on or off (sampled = false: the exact radix path alone).
enum class TopkPath { kAuto, kSampled, kExact };
void selectTopkWith(const TopkIsaKernels& isa, TopkPath path, const void* values, DataType dtype,
                    size_t count, size_t k, uint64_t seed, uint32_t* indicesOut, void* valuesOut,
                    TopkScratch& scratch);

}  // namespace lightcc::kernels
