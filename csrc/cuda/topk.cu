// CUDA top-k kernels: exact select, scatter-add, residual, momentum, fusion buffer copies.
//
// Selection on the device (selectTopkCuda), all enqueued on one stream, no host round trip:
//   init       state = radixStart(k), histogram zeroed
//   3 x hist   every block histograms one digit of the keys matching the prefix so far in
//              shared memory, then adds its bins to the global histogram (atomics)
//       pick   one block: radixAdvance narrows the prefix (topk_ops.h), zeroes the histogram
//   count      block c counts the entries of chunk c above T and equal to T
//   scan       one block: exclusive prefix sums of those counts over the chunks
//   write      block c walks its chunk in index order; warp ballots give every entry the number
//              of entries above/equal to T before it, topkSlot its output slot
// T is the k-th largest key. The result is the same unique set the CPU returns, in index order,
// without a sort; every step reads the whole input once (five passes), which at GPU bandwidth
// is cheaper than the CPU's sampling would be in launches and host synchronisation.
#include <cuda_runtime.h>

#include <string>

#include "cuda/topk_cuda.h"
#include "kernels/half.h"
#include "kernels/topk_ops.h"

namespace lightcc::cuda {
namespace {

using kernels::BFloat16;
using kernels::Half;
using kernels::RadixState;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTilesPerChunk = 16;
constexpr size_t kChunk = size_t(kThreads) * kTilesPerChunk;  // entries per count/write block
constexpr unsigned kMaxBlocks = 4096;  // grid-stride beyond this
constexpr unsigned kHistBlocks = 1024;  // each merges up to 2048 bins into the global histogram
constexpr size_t kStateBytes = 256;     // TopkState, padded
constexpr size_t kHistBytes = kernels::kRadixBins * sizeof(unsigned int);

struct TopkState {
  RadixState radix;
};

unsigned gridFor(size_t n) {
  size_t blocks = (n + kThreads - 1) / kThreads;
  return unsigned(blocks < kMaxBlocks ? (blocks ? blocks : 1) : kMaxBlocks);
}

size_t chunksFor(size_t count) { return (count + kChunk - 1) / kChunk; }

// ---- selection ----

__global__ void initKernel(TopkState* st, unsigned int* hist, unsigned long long k) {
  if (threadIdx.x == 0) st->radix = kernels::radixStart(k);
  for (int b = threadIdx.x; b < kernels::kRadixBins; b += blockDim.x) hist[b] = 0;
}

template <class S>
__global__ void histKernel(const S* v, size_t count, const TopkState* st, int pass,
                           unsigned int* hist) {
  __shared__ unsigned int bins[kernels::kRadixBins];
  for (int b = threadIdx.x; b < kernels::kRadixBins; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  const RadixState s = st->radix;
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    uint32_t key = kernels::magnitudeKey(v[i]);
    if (kernels::radixMatches(s, key)) atomicAdd(&bins[kernels::radixDigit(key, pass)], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < int(kernels::radixBins(pass)); b += blockDim.x) {
    if (bins[b] != 0) atomicAdd(&hist[b], bins[b]);
  }
}

__global__ void pickKernel(TopkState* st, unsigned int* hist, int pass) {
  if (threadIdx.x == 0) kernels::radixAdvance(st->radix, hist, pass);
  __syncthreads();
  for (int b = threadIdx.x; b < kernels::kRadixBins; b += blockDim.x) hist[b] = 0;
}

// Sum over the block; every thread gets the total. `scratch` holds kWarps entries.
__device__ unsigned blockSum(unsigned x, unsigned* scratch) {
  for (int d = 16; d > 0; d >>= 1) x += __shfl_down_sync(0xffffffffu, x, d);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = x;
  __syncthreads();
  unsigned total = 0;
  for (int w = 0; w < kWarps; ++w) total += scratch[w];
  __syncthreads();
  return total;
}

// counts[c] = (entries of chunk c equal to T) << 32 | (entries above T). Both fit 32 bits,
// and so do their sums over all chunks (count <= 2^32 - 1): the scan runs on the packed pair.
template <class S>
__global__ void countKernel(const S* v, size_t count, const TopkState* st,
                            unsigned long long* counts) {
  __shared__ unsigned scratch[kWarps];
  const uint32_t kth = st->radix.prefix;
  size_t base = size_t(blockIdx.x) * kChunk;
  unsigned above = 0, ties = 0;
  for (int t = 0; t < kTilesPerChunk; ++t) {
    size_t i = base + size_t(t) * kThreads + threadIdx.x;
    if (i < count) {
      uint32_t key = kernels::magnitudeKey(v[i]);
      above += key > kth;
      ties += key == kth;
    }
  }
  above = blockSum(above, scratch);
  ties = blockSum(ties, scratch);
  if (threadIdx.x == 0) counts[blockIdx.x] = (static_cast<unsigned long long>(ties) << 32) | above;
}

// Exclusive prefix sum of counts[0..n) in place; one block of 1024 threads, tile by tile.
__global__ void scanKernel(unsigned long long* counts, size_t n) {
  __shared__ unsigned long long warpTotals[32];
  unsigned long long carry = 0;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (size_t base = 0; base < n; base += blockDim.x) {
    size_t i = base + threadIdx.x;
    unsigned long long own = i < n ? counts[i] : 0ull;
    unsigned long long incl = own;
    for (int d = 1; d < 32; d <<= 1) {
      unsigned long long up = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += up;
    }
    if (lane == 31) warpTotals[warp] = incl;
    __syncthreads();
    unsigned long long before = carry, tile = 0;
    for (int w = 0; w < int(blockDim.x >> 5); ++w) {
      if (w < warp) before += warpTotals[w];
      tile += warpTotals[w];
    }
    if (i < n) counts[i] = before + incl - own;
    carry += tile;
    __syncthreads();  // warpTotals is rewritten by the next tile
  }
}

template <class S>
__global__ void writeKernel(const S* v, size_t count, const TopkState* st,
                            const unsigned long long* offsets, uint32_t* idxOut, S* valOut) {
  __shared__ unsigned warpAbove[kWarps], warpTies[kWarps];
  const uint32_t kth = st->radix.prefix;
  const unsigned long long need = st->radix.need;
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned lanesBelow = (1u << lane) - 1;
  unsigned long long runAbove = offsets[blockIdx.x] & 0xffffffffull;
  unsigned long long runTies = offsets[blockIdx.x] >> 32;
  size_t base = size_t(blockIdx.x) * kChunk;
  for (int t = 0; t < kTilesPerChunk; ++t) {
    size_t i = base + size_t(t) * kThreads + threadIdx.x;
    bool valid = i < count;
    S x{};
    uint32_t key = 0;
    if (valid) {
      x = v[i];
      key = kernels::magnitudeKey(x);
    }
    unsigned aboveMask = __ballot_sync(0xffffffffu, valid && key > kth);
    unsigned tieMask = __ballot_sync(0xffffffffu, valid && key == kth);
    if (lane == 0) {
      warpAbove[warp] = __popc(aboveMask);
      warpTies[warp] = __popc(tieMask);
    }
    __syncthreads();
    unsigned long long aboveBefore = runAbove + __popc(aboveMask & lanesBelow);
    unsigned long long tiesBefore = runTies + __popc(tieMask & lanesBelow);
    for (int w = 0; w < kWarps; ++w) {
      if (w < int(warp)) aboveBefore += warpAbove[w], tiesBefore += warpTies[w];
      runAbove += warpAbove[w];
      runTies += warpTies[w];
    }
    if (valid && kernels::topkKeeps(key, kth, tiesBefore, need)) {
      unsigned long long slot = kernels::topkSlot(aboveBefore, tiesBefore, need);
      idxOut[slot] = uint32_t(i);
      valOut[slot] = x;
    }
    __syncthreads();  // warpAbove/warpTies are rewritten by the next tile
  }
}

template <class S>
void launchSelect(const void* values, size_t count, unsigned long long k, uint32_t* idxOut,
                  void* valOut, char* ws, cudaStream_t s) {
  const S* v = static_cast<const S*>(values);
  TopkState* st = reinterpret_cast<TopkState*>(ws);
  unsigned int* hist = reinterpret_cast<unsigned int*>(ws + kStateBytes);
  unsigned long long* counts = reinterpret_cast<unsigned long long*>(ws + kStateBytes + kHistBytes);
  unsigned chunks = unsigned(chunksFor(count));
  initKernel<<<1, kThreads, 0, s>>>(st, hist, k);
  for (int pass = 0; pass < kernels::kRadixPasses; ++pass) {
    unsigned blocks = gridFor(count) < kHistBlocks ? gridFor(count) : kHistBlocks;
    histKernel<S><<<blocks, kThreads, 0, s>>>(v, count, st, pass, hist);
    pickKernel<<<1, kThreads, 0, s>>>(st, hist, pass);
  }
  countKernel<S><<<chunks, kThreads, 0, s>>>(v, count, st, counts);
  scanKernel<<<1, 1024, 0, s>>>(counts, chunks);
  writeKernel<S><<<chunks, kThreads, 0, s>>>(v, count, st, counts, idxOut, static_cast<S*>(valOut));
}

// ---- element-wise updates ----

template <class S>
__global__ void residualKernel(float* r, const S* g, size_t n, float scale) {
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    r[i] = kernels::residualStep(r[i], kernels::toFloat(g[i]), scale);
  }
}

template <class S>
__global__ void momentumKernel(float* u, float* v, const S* g, size_t n, float m) {
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float uu = u[i], vv = v[i];
    kernels::momentumStep(uu, vv, kernels::toFloat(g[i]), m);
    u[i] = uu;
    v[i] = vv;
  }
}

__global__ void clearKernel(float* r, const uint32_t* idx, size_t k) {
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < k; i += stride) {
    r[idx[i]] = 0.0f;
  }
}

template <class S>
__global__ void roundKernel(float* r, const uint32_t* idx, const float* sel, S* wire, size_t k) {
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < k; i += stride) {
    kernels::storeWire(sel[i], &wire[i]);
    r[idx[i]] = kernels::wireRemainder(sel[i], kernels::toFloat(wire[i]));
  }
}

template <class S>
__global__ void fromFloatKernel(S* dst, const float* src, size_t n) {
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    kernels::storeWire(src[i], &dst[i]);
  }
}

// One rank's pairs. Unique indices make the read-modify-write race-free, and a plain add (not
// atomicAdd) keeps the CPU's rounding exactly, denormals included.
template <class S>
__global__ void scatterAddKernel(float* dst, size_t count, const uint32_t* idx, const S* val,
                                 size_t k, unsigned int* bad) {
  size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < k; i += stride) {
    uint32_t at = idx[i];
    if (at < count) {
      dst[at] = kernels::addRn(dst[at], kernels::toFloat(val[i]));
    } else if (bad != nullptr) {
      atomicAdd(bad, 1u);
    }
  }
}

// ---- fusion copies ----

constexpr int kSegmentsPerLaunch = 64;  // 64 x 24 bytes of kernel parameters

struct CopyJob {
  const char* src;
  char* dst;
  size_t bytes;
};
struct CopyBatch {
  CopyJob job[kSegmentsPerLaunch];
};

// The widest word that both addresses are aligned to carries the body; the tail goes by bytes.
template <class W>
__device__ void copyWords(const CopyJob& j, size_t tid, size_t stride) {
  size_t words = j.bytes / sizeof(W);
  const W* s = reinterpret_cast<const W*>(j.src);
  W* d = reinterpret_cast<W*>(j.dst);
  for (size_t i = tid; i < words; i += stride) d[i] = s[i];
  for (size_t i = words * sizeof(W) + tid; i < j.bytes; i += stride) j.dst[i] = j.src[i];
}

__global__ void copyKernel(CopyBatch batch) {
  const CopyJob j = batch.job[blockIdx.y];
  size_t tid = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t stride = size_t(gridDim.x) * blockDim.x;
  uintptr_t align = reinterpret_cast<uintptr_t>(j.src) | reinterpret_cast<uintptr_t>(j.dst);
  if (align % 16 == 0) copyWords<uint4>(j, tid, stride);
  else if (align % 8 == 0) copyWords<uint2>(j, tid, stride);
  else if (align % 4 == 0) copyWords<unsigned int>(j, tid, stride);
  else copyWords<unsigned char>(j, tid, stride);
}

Status launchError(const std::string& what) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return Status::OK();
  return Status::Internal("CUDA " + what + " launch failed: " + cudaGetErrorString(err));
}

bool floatingInput(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat16 ||
         dtype == DataType::kBFloat16;
}

Status unsupported(const char* what, DataType dtype) {
  return Status::InvalidArgument(std::string("CUDA ") + what +
                                 " takes float32, float16 or bfloat16, not " + dtypeName(dtype));
}

// Calls fn.template operator()<S>() with S the storage type of a float32/16/bf16 dtype.
template <class Fn>
void withStorage(DataType dtype, Fn&& fn) {
  if (dtype == DataType::kFloat16) fn(Half{});
  else if (dtype == DataType::kBFloat16) fn(BFloat16{});
  else fn(0.0f);
}

Status copySegments(char* buffer, const CudaSegment* segs, int n, bool pack, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  for (int first = 0; first < n; first += kSegmentsPerLaunch) {
    CopyBatch batch{};
    int used = 0;
    size_t largest = 0;
    for (int i = first; i < n && i < first + kSegmentsPerLaunch; ++i) {
      if (segs[i].bytes == 0) continue;
      char* inBuffer = buffer + segs[i].offset;
      char* tensor = static_cast<char*>(segs[i].ptr);
      batch.job[used++] = pack ? CopyJob{tensor, inBuffer, segs[i].bytes}
                               : CopyJob{inBuffer, tensor, segs[i].bytes};
      if (segs[i].bytes > largest) largest = segs[i].bytes;
    }
    if (used == 0) continue;
    // Enough blocks for the largest segment at 16 bytes per thread, capped: grid-stride.
    size_t blocks = (largest / 16 + kThreads - 1) / kThreads;
    blocks = blocks < 1 ? 1 : blocks > 512 ? 512 : blocks;
    copyKernel<<<dim3(unsigned(blocks), unsigned(used)), kThreads, 0, s>>>(batch);
  }
  return launchError(pack ? "fusion pack" : "fusion unpack");
}

}  // namespace

size_t topkWorkspaceBytesCuda(size_t count) {
  return kStateBytes + kHistBytes + chunksFor(count) * sizeof(unsigned long long);
}

Status selectTopkCuda(const void* values, DataType dtype, size_t count, size_t k,
                      uint32_t* indicesOut, void* valuesOut, void* workspace,
                      size_t workspaceBytes, void* stream) {
  if (!floatingInput(dtype)) return unsupported("top-k selection", dtype);
  if (count > 0xffffffffull || k > count) {
    return Status::InvalidArgument("CUDA top-k selection: k = " + std::to_string(k) +
                                   " of count = " + std::to_string(count) +
                                   " (need k <= count <= 2^32 - 1)");
  }
  if (workspaceBytes < topkWorkspaceBytesCuda(count)) {
    return Status::InvalidArgument("CUDA top-k selection: workspace of " +
                                   std::to_string(workspaceBytes) + " bytes, need " +
                                   std::to_string(topkWorkspaceBytesCuda(count)));
  }
  if (k == 0) return Status::OK();
  char* ws = static_cast<char*>(workspace);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  withStorage(dtype, [&](auto tag) {
    launchSelect<decltype(tag)>(values, count, k, indicesOut, valuesOut, ws, s);
  });
  return launchError(std::string("top-k selection (") + dtypeName(dtype) + ", " +
                     std::to_string(count) + " elements, k = " + std::to_string(k) + ")");
}

Status scatterAddRanksCuda(float* dst, size_t count, const uint32_t* const* indices,
                           const void* const* values, DataType dtype, int nranks, size_t k,
                           unsigned int* badIndices, void* stream) {
  if (!floatingInput(dtype)) return unsupported("top-k scatter-add", dtype);
  if (nranks < 0) return Status::InvalidArgument("CUDA top-k scatter-add: negative rank count");
  if (k == 0) return Status::OK();
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  for (int r = 0; r < nranks; ++r) {  // stream order = rank order
    withStorage(dtype, [&](auto tag) {
      using S = decltype(tag);
      scatterAddKernel<S><<<gridFor(k), kThreads, 0, s>>>(
          dst, count, indices[r], static_cast<const S*>(values[r]), k, badIndices);
    });
  }
  return launchError("top-k scatter-add");
}

Status accumulateResidualCuda(float* residual, const void* grad, DataType dtype, size_t count,
                              float scale, void* stream) {
  if (!floatingInput(dtype)) return unsupported("residual accumulation", dtype);
  if (count == 0) return Status::OK();
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  withStorage(dtype, [&](auto tag) {
    using S = decltype(tag);
    residualKernel<S><<<gridFor(count), kThreads, 0, s>>>(residual, static_cast<const S*>(grad),
                                                          count, scale);
  });
  return launchError("residual accumulation");
}

Status clearSelectedCuda(float* residual, const uint32_t* indices, size_t k, void* stream) {
  if (k == 0) return Status::OK();
  clearKernel<<<gridFor(k), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(residual, indices, k);
  return launchError("clear selected");
}

Status momentumCorrectCuda(float* u, float* v, const void* grad, DataType dtype, size_t count,
                           float momentum, void* stream) {
  if (!floatingInput(dtype)) return unsupported("momentum correction", dtype);
  if (count == 0) return Status::OK();
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  withStorage(dtype, [&](auto tag) {
    using S = decltype(tag);
    momentumKernel<S><<<gridFor(count), kThreads, 0, s>>>(u, v, static_cast<const S*>(grad),
                                                          count, momentum);
  });
  return launchError("momentum correction");
}

Status roundSelectedCuda(float* residual, const uint32_t* indices, const float* selected, void* wire,
                         DataType dtype, size_t k, void* stream) {
  if (!floatingInput(dtype)) return unsupported("top-k wire values", dtype);
  if (k == 0) return Status::OK();
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  withStorage(dtype, [&](auto tag) {
    using S = decltype(tag);
    roundKernel<S><<<gridFor(k), kThreads, 0, s>>>(residual, indices, selected, static_cast<S*>(wire), k);
  });
  return launchError("top-k wire values");
}

Status fromFloatCuda(void* dst, const float* src, size_t count, DataType dtype, void* stream) {
  if (!floatingInput(dtype)) return unsupported("rounding float32", dtype);
  if (count == 0) return Status::OK();
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  withStorage(dtype, [&](auto tag) {
    using S = decltype(tag);
    fromFloatKernel<S><<<gridFor(count), kThreads, 0, s>>>(static_cast<S*>(dst), src, count);
  });
  return launchError("rounding float32");
}

Status packCuda(void* buffer, const CudaSegment* segments, int n, void* stream) {
  return copySegments(static_cast<char*>(buffer), segments, n, true, stream);
}

Status unpackCuda(const void* buffer, const CudaSegment* segments, int n, void* stream) {
  // The buffer is only read when unpacking; the shared copy routine takes it as char*.
  return copySegments(const_cast<char*>(static_cast<const char*>(buffer)), segments, n, false,
                      stream);
}

}  // namespace lightcc::cuda

extern "C" const lightcc::cuda::CudaTopkTableV2* lightccCudaTopkTableV2() {
  using namespace lightcc::cuda;
  static const CudaTopkTableV2 table = {
      2,
      topkWorkspaceBytesCuda,
      selectTopkCuda,
      scatterAddRanksCuda,
      accumulateResidualCuda,
      clearSelectedCuda,
      momentumCorrectCuda,
      packCuda,
      unpackCuda,
      roundSelectedCuda,
      fromFloatCuda,
  };
  return &table;
}
