// Throughput table for the CPU reduction kernels (GB/s per dtype, n and instruction set).
//
// Build and run from the repository root, as for reduce_test.cc (indented lines continue):
//   F="-std=c++17 -O2 -ffp-contract=off -Icsrc"
//   g++ $F -mavx2 -mf16c -c csrc/kernels/reduce_avx2.cc -o /tmp/lk_avx2.o
//   g++ $F -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mf16c -mprefer-vector-width=256
//       -c csrc/kernels/reduce_avx512.cc -o /tmp/lk_avx512.o
//   g++ $F csrc/kernels/{reduce_generic,reduce_scaled_int,integer_average,dispatch}.cc
//       csrc/common/dtype.cc
//       tests/cpp/reduce_bench.cc /tmp/lk_avx2.o /tmp/lk_avx512.o -o /tmp/reduce_bench
//   /tmp/reduce_bench [MiB per buffer, default 16]
//
// "moved" counts every byte read and written ((n + 1) buffers), the figure to hold against
// memory bandwidth; "out" counts the output only (numpy's usual elements-per-second view).
// Times are the best of several runs over buffers already faulted in.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "common/dtype.h"
#include "kernels/reduce.h"
#include "kernels/simd_dispatch.h"

namespace lk = lightcc::kernels;
using lightcc::DataType;
using lightcc::ReduceOp;

namespace {

constexpr int kReps = 20;  // best-of: the 2 shared cores are noisy

template <class F>
double bestSeconds(F&& f) {
  double best = 1e30;
  for (int r = 0; r < kReps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return best;
}

struct FreeDeleter {
  void operator()(unsigned char* p) const { std::free(p); }
};
using Block = std::unique_ptr<unsigned char, FreeDeleter>;

// 64-byte aligned, as tensors from framework allocators and shm slots are; `skew` bytes of
// offset on the sources measures the misaligned case.
struct Buffers {
  std::vector<Block> blocks;
  std::vector<const void*> ptrs;
  unsigned char* dst;
  Buffers(int n, size_t bytes, size_t skew = 0) {
    for (int j = 0; j <= n; ++j) {
      blocks.emplace_back(static_cast<unsigned char*>(std::aligned_alloc(64, bytes + 64)));
      // Small values in every dtype's bit pattern: no NaN/inf/denormal slow paths.
      unsigned char* p = blocks.back().get();
      std::memset(p, 0, bytes + 64);
      for (size_t b = 0; b < bytes + 64; b += 2) p[b + 1] = 0x3c;
      if (j < n) ptrs.push_back(p + skew);
    }
    dst = blocks.back().get();
  }
};

void printRow(const char* what, size_t bytes, int streams, double s) {
  std::printf("  %-28s %8.2f ms  moved %6.1f GB/s  out %6.1f GB/s\n", what, s * 1e3,
              double(bytes) * streams / s / 1e9, double(bytes) / s / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? size_t(std::atoi(argv[1])) : 16;
  size_t bytes = mib << 20;
  std::printf("reduce_bench: %zu MiB per buffer, dispatched simd level %s, best of %d\n", mib,
              lk::simdLevel(), kReps);

  {
    Buffers b(1, bytes);
    double s = bestSeconds([&] { std::memcpy(b.dst, b.ptrs[0], bytes); });
    printRow("memcpy", bytes, 2, s);
    float* d = reinterpret_cast<float*>(b.dst);
    const float* a = static_cast<const float*>(b.ptrs[0]);
    s = bestSeconds([&] {
      for (size_t i = 0; i < bytes / 4; ++i) d[i] = a[i] + d[i];
    });
    printRow("plain loop f32 d=a+d", bytes, 3, s);
  }

  {
    Buffers b(2, bytes, 4);
    double s = bestSeconds([&] {
      lk::reduceN(b.dst, b.ptrs.data(), 2, bytes / 4, DataType::kFloat32, ReduceOp::kSum, 1, 1);
    });
    printRow("f32 n=2 sources skewed 4 B", bytes, 3, s);
  }

  const DataType types[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16,
                            DataType::kFloat64, DataType::kInt32};
  std::vector<lk::SimdLevel> levels;
  for (lk::SimdLevel l : {lk::SimdLevel::kAvx512, lk::SimdLevel::kAvx2, lk::SimdLevel::kGeneric}) {
    if (lk::simdLevelSupported(l)) levels.push_back(l);
  }
  for (int n : {2, 4}) {
    Buffers b(n, bytes);
    for (DataType t : types) {
      size_t count = bytes / lightcc::dtypeSize(t);
      std::printf("%s sum, n=%d\n", lightcc::dtypeName(t), n);
      for (lk::SimdLevel l : levels) {
        double s = bestSeconds([&] {
          lk::reduceNAt(l, b.dst, b.ptrs.data(), n, count, t, ReduceOp::kSum, 1.0, 1.0);
        });
        char label[64];
        std::snprintf(label, sizeof label, "%s", lk::simdLevelName(l));
        printRow(label, bytes, n + 1, s);
      }
      // In place (dst == srcs[0]), the ring allreduce's shape: n reads + 1 write, one fewer buffer.
      std::vector<const void*> inPlace = b.ptrs;
      inPlace[0] = b.dst;
      double s = bestSeconds([&] {
        lk::reduceN(b.dst, inPlace.data(), n, count, t, ReduceOp::kSum, 1.0, 1.0);
      });
      printRow("dispatched, dst==srcs[0]", bytes, n + 1, s);
      if (t == DataType::kFloat32) {
        s = bestSeconds([&] {
          lk::reduceN(b.dst, b.ptrs.data(), n, count, t, ReduceOp::kSum, 0.5, 0.25);
        });
        printRow("dispatched, pre/postscale", bytes, n + 1, s);
      }
    }
  }
  // Cache-resident sizes, where the instruction set rather than DRAM sets the pace. The
  // buffers are reused across repetitions, so they stay in L1/L2/L3 as their size allows.
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16}) {
    std::printf("%s sum, n=2, in place (dst == srcs[0]), cache-resident sizes\n",
                lightcc::dtypeName(t));
    for (size_t kib : {size_t(16), size_t(256), size_t(2048)}) {
      size_t inner = (size_t(16) << 10) / kib;  // 16 MiB of output per timed run
      Buffers b(2, kib << 10);
      std::vector<const void*> inPlace = b.ptrs;
      inPlace[0] = b.dst;
      for (lk::SimdLevel l : levels) {
        double s = bestSeconds([&] {
          for (size_t k = 0; k < inner; ++k) {
            lk::reduceNAt(l, b.dst, inPlace.data(), 2, (kib << 10) / lightcc::dtypeSize(t), t,
                          ReduceOp::kSum, 1.0, 1.0);
          }
        });
        char label[64];
        std::snprintf(label, sizeof label, "%zu KiB %s", kib, lk::simdLevelName(l));
        printRow(label, (kib << 10) * inner, 3, s);
      }
    }
  }
  return 0;
}
