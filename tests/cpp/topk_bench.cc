// Times the CPU top-k kernels on 25.6 M floats: selection, scatter-add, residual, momentum.
//
// Build and run from the repository root, as for topk_test.cc (indented lines continue):
//   F="-std=c++17 -O2 -ffp-contract=off -Icsrc"
//   g++ $F -mavx2 -mf16c -c csrc/kernels/reduce_avx2.cc -o /tmp/lk_avx2.o
//   g++ $F -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mf16c -mprefer-vector-width=256
//       -c csrc/kernels/reduce_avx512.cc -o /tmp/lk_avx512.o
//   g++ $F csrc/kernels/topk_*.cc
//       csrc/kernels/{reduce_generic,reduce_scaled_int,integer_average,dispatch}.cc
//       csrc/common/dtype.cc tests/cpp/topk_bench.cc /tmp/lk_avx2.o /tmp/lk_avx512.o
//       -o /tmp/topk_bench
//   /tmp/topk_bench [million elements, default 25.6]
//
// Reference point (docs: algorithms.md), NumPy on one core of this machine for 1 % of 25.6 M
// floats: exact selection 145-180 ms, with a 1 % sample 55-70 ms. Times below are the median
// of several runs with a new seed each (as in training), buffers already faulted in.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "kernels/half.h"
#include "kernels/simd_dispatch.h"
#include "kernels/topk.h"
#include "kernels/topk_detail.h"

namespace lk = lightcc::kernels;
using lightcc::DataType;

namespace {

constexpr int kRuns = 7;

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  double unit() { return double(next() >> 11) * 0x1p-53; }
};

double threadCpuMs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

// Medians of wall time and of this thread's CPU time: the machine is shared, and CPU time
// leaves out the slices other processes took (memory contention still shows in both).
struct Times {
  double wall, cpu;
};

template <class Fn>
Times median(Fn fn) {
  std::vector<double> wall, cpu;
  for (int r = 0; r < kRuns; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    double c0 = threadCpuMs();
    fn(r);
    cpu.push_back(threadCpuMs() - c0);
    wall.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[kRuns / 2], cpu[kRuns / 2]};
}

const char* outcomeName(lk::TopkOutcome o) {
  const char* names[] = {"none", "all", "exact", "survivors", "tie-padding", "fallback"};
  return names[int(o)];
}

// Gaussian-like gradients (sum of uniforms: cheap to make, no libm per element), heavy-tailed
// ones, and an embedding-like tensor that is 99 % zeros.
std::vector<float> makeInput(const std::string& kind, size_t n) {
  Rng rng{0x9e3779b97f4a7c15ull};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    double u = rng.unit() + rng.unit() + rng.unit() - 1.5;
    if (kind == "normal") v[i] = float(u * 0.01);
    else if (kind == "cauchy") v[i] = float(std::tan(3.14159265 * (rng.unit() - 0.5)) * 1e-3);
    else v[i] = rng.next() % 100 == 0 ? float(u) : 0.0f;
  }
  return v;
}

void benchSelection(const std::vector<float>& v, const std::string& kind, double density,
                    const lk::TopkIsaKernels& isa, lk::TopkPath path, const char* pathName) {
  size_t n = v.size(), k = lk::topkK(n, density);
  std::vector<uint32_t> idx(k);
  std::vector<float> vals(k);
  lk::TopkScratch scratch;
  lk::selectTopkWith(isa, path, v.data(), DataType::kFloat32, n, k, 0, idx.data(), vals.data(),
                     scratch);  // warm: scratch grown, pages touched
  Times t = median([&](int r) {
    lk::selectTopkWith(isa, path, v.data(), DataType::kFloat32, n, k, uint64_t(r + 1), idx.data(),
                       vals.data(), scratch);
  });
  std::printf("select  %-7s %-11s density %-6g %-7s %7.1f ms cpu %7.1f ms wall  (%s, %d passes)\n",
              isa.name, kind.c_str(), density, pathName, t.cpu, t.wall,
              outcomeName(scratch.outcome), scratch.filterPasses);
}

void benchUpdates(size_t n) {
  std::vector<float> r(n, 0.5f), u(n, 0.25f), v(n, 1.0f), g(n, 0.125f);
  std::vector<uint16_t> h(n, lk::floatToHalf(0.125f));
  for (int level = 0; level <= 2; ++level) {
    const lk::TopkIsaKernels* isa = lk::topkKernelsAt(lk::SimdLevel(level));
    if (!isa) continue;
    const DataType f32 = DataType::kFloat32, f16 = DataType::kFloat16;
    double res = median([&](int) { isa->residual(r.data(), g.data(), f32, n, .5f); }).cpu;
    double resH = median([&](int) { isa->residual(r.data(), h.data(), f16, n, .5f); }).cpu;
    double mom = median([&](int) { isa->momentum(u.data(), v.data(), g.data(), f32, n, .9f); }).cpu;
    // Bytes moved: residual reads r and g and writes r; momentum reads u, v, g, writes u, v.
    std::printf("update  %-7s residual %6.1f ms cpu (%4.1f GB/s), f16 grad %6.1f ms; "
                "momentum %6.1f ms (%4.1f GB/s)\n",
                isa->name, res, 12.0 * n / res / 1e6, resH, mom, 20.0 * n / mom / 1e6);
  }
}

void benchScatter(size_t n, double density, int ranks) {
  size_t k = lk::topkK(n, density);
  Rng rng{1};
  std::vector<std::vector<uint32_t>> idx(ranks);
  std::vector<std::vector<float>> val(ranks, std::vector<float>(k, 1.0f));
  std::vector<const uint32_t*> ip;
  std::vector<const float*> vp;
  for (int r = 0; r < ranks; ++r) {
    // Sorted distinct indices spread over the tensor, as selectTopk produces.
    size_t step = n / k;
    for (size_t i = 0; i < k; ++i) idx[r].push_back(uint32_t(i * step + rng.next() % step));
    ip.push_back(idx[r].data()), vp.push_back(val[r].data());
  }
  std::vector<float> dst(n, 0.0f);
  Times t = median([&](int) {
    if (!lk::scatterAddRanks(dst.data(), n, ip.data(), vp.data(), ranks, k).ok()) std::abort();
  });
  std::printf("scatter %2d ranks x %6zu pairs into %zu floats: %6.2f ms cpu %6.2f ms wall\n", ranks,
              k, n, t.cpu, t.wall);
}

}  // namespace

int main(int argc, char** argv) {
  double millions = argc > 1 ? std::atof(argv[1]) : 25.6;
  size_t n = size_t(millions * 1e6);
  std::printf("top-k kernels on %zu floats; dispatcher picks %s\n", n, lk::topkKernels().name);
  std::vector<float> normal = makeInput("normal", n);
  for (int level = 2; level >= 0; --level) {
    const lk::TopkIsaKernels* isa = lk::topkKernelsAt(lk::SimdLevel(level));
    if (isa) benchSelection(normal, "normal", 0.01, *isa, lk::TopkPath::kAuto, "sampled");
  }
  const lk::TopkIsaKernels& best = lk::topkKernels();
  benchSelection(normal, "normal", 0.01, best, lk::TopkPath::kExact, "exact");
  for (double density : {0.001, 0.0625, 0.25}) {
    benchSelection(normal, "normal", density, best, lk::TopkPath::kAuto, "sampled");
  }
  benchSelection(normal, "normal", 0.25, best, lk::TopkPath::kExact, "exact");
  for (const char* kind : {"cauchy", "mostly-zero"}) {
    std::vector<float> v = makeInput(kind, n);
    benchSelection(v, kind, 0.01, best, lk::TopkPath::kAuto, "sampled");
    benchSelection(v, kind, 0.01, best, lk::TopkPath::kExact, "exact");
  }
  benchUpdates(n);
  benchScatter(n, 0.01, 8);
  benchScatter(n, 0.001, 32);
  return 0;
}
