// Adasum's pure parts: the element kernels, the coefficients, and the halving schedule, run for
// p simulated members in one process and held to a recursive double-precision reference.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "algorithms/adasum.h"
#include "kernels/half.h"

using lightcc::DataType;

namespace {

struct Tally {
  int passed = 0, failed = 0;
  void check(bool ok, const std::string& what) {
    if (ok) {
      ++passed;
    } else {
      ++failed;
      if (failed <= 40) std::printf("FAIL: %s\n", what.c_str());
    }
  }
};

// Horovod's definition, per tensor, in double: a (+) b.
std::vector<double> adasumPair(const std::vector<double>& a, const std::vector<double>& b) {
  double dot = 0, an = 0, bn = 0;
  for (size_t i = 0; i < a.size(); ++i) dot += a[i] * b[i], an += a[i] * a[i], bn += b[i] * b[i];
  const double tiny = std::sqrt(2.2250738585072014e-308);
  const double ac = an >= tiny ? 1 - dot / (2 * an) : 1, bc = bn >= tiny ? 1 - dot / (2 * bn) : 1;
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = ac * a[i] + bc * b[i];
  return out;
}

// Pairwise tree over members: (v0 (+) v1) (+) (v2 (+) v3), ...
std::vector<double> reference(std::vector<std::vector<double>> v) {
  while (v.size() > 1) {
    std::vector<std::vector<double>> next;
    for (size_t i = 0; i < v.size(); i += 2) next.push_back(adasumPair(v[i], v[i + 1]));
    v.swap(next);
  }
  return v[0];
}

// Runs the flat algorithm's arithmetic for p members over float32, as adasumAllreduce does over
// links: exchange per the schedule, per-tensor partials summed over each block, combine, then
// every member's last kept range is the result.
std::vector<float> simulate(const std::vector<std::vector<float>>& in, const std::vector<size_t>& counts, int p) {
  const size_t n = in[0].size();
  std::vector<size_t> bounds(1, 0);
  for (size_t c : counts) bounds.push_back(bounds.back() + c);
  std::vector<std::vector<float>> buf = in;
  std::vector<std::vector<lightcc::AdasumStep>> sched(p);
  for (int m = 0; m < p; ++m) sched[m] = lightcc::adasumSchedule(n, p, m);
  const size_t levels = sched[0].size();
  for (size_t k = 0; k < levels; ++k) {
    std::vector<std::vector<float>> tmp(p);
    std::vector<std::vector<double>> vals(p, std::vector<double>(3 * counts.size(), 0.0));
    for (int m = 0; m < p; ++m) {
      const auto& s = sched[m][k];
      tmp[m].assign(buf[s.peer_member].begin() + s.keep_lo, buf[s.peer_member].begin() + s.keep_hi);
      for (size_t t = 0; t < counts.size(); ++t) {
        size_t a = std::max(bounds[t], s.keep_lo), e = std::min(bounds[t + 1], s.keep_hi);
        if (a >= e) continue;
        auto part = lightcc::adasumPartial(buf[m].data() + a, tmp[m].data() + (a - s.keep_lo), e - a,
                                           DataType::kFloat32);
        vals[m][3 * t] = part.dot;
        vals[m][3 * t + 1] = s.lower ? part.anorm : part.bnorm;
        vals[m][3 * t + 2] = s.lower ? part.bnorm : part.anorm;
      }
    }
    const int block = 2 << k;
    for (int m = 0; m < p; ++m) {
      const auto& s = sched[m][k];
      std::vector<double> sum(3 * counts.size(), 0.0);
      for (int j = m / block * block; j < m / block * block + block; ++j) {
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += vals[j][i];
      }
      for (size_t t = 0; t < counts.size(); ++t) {
        size_t a = std::max(bounds[t], s.keep_lo), e = std::min(bounds[t + 1], s.keep_hi);
        if (a >= e) continue;
        double lc, uc;
        lightcc::adasumCoefficients(sum[3 * t], sum[3 * t + 1], sum[3 * t + 2], &lc, &uc);
        lightcc::adasumCombine(buf[m].data() + a, s.lower ? lc : uc, tmp[m].data() + (a - s.keep_lo),
                               s.lower ? uc : lc, e - a, DataType::kFloat32);
      }
    }
  }
  std::vector<float> out(n, NAN);
  std::vector<int> owners(n, 0);
  for (int m = 0; m < p; ++m) {
    size_t lo = levels ? sched[m].back().keep_lo : 0, hi = levels ? sched[m].back().keep_hi : n;
    for (size_t i = lo; i < hi; ++i) out[i] = buf[m][i], ++owners[i];
  }
  for (size_t i = 0; i < n; ++i) {
    if (owners[i] != 1) out[i] = NAN;  // every element must have exactly one owner
  }
  return out;
}

void testAgainstReference(Tally& tally) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  const std::vector<std::vector<size_t>> layouts = {{1}, {7}, {1000}, {3, 0, 5, 9}, {1, 1}, {513, 2, 64}};
  for (int p : {1, 2, 4, 8}) {
    for (const auto& counts : layouts) {
      size_t n = 0;
      for (size_t c : counts) n += c;
      std::vector<std::vector<float>> in(p, std::vector<float>(n));
      for (int m = 0; m < p; ++m) {
        for (size_t i = 0; i < n; ++i) in[m][i] = g(rng) + (m % 2 ? 0.5f : 0.0f);
      }
      std::vector<float> got = simulate(in, counts, p);
      double worst = 0;
      size_t off = 0;
      for (size_t c : counts) {
        std::vector<std::vector<double>> v(p);
        for (int m = 0; m < p; ++m) v[m].assign(in[m].begin() + off, in[m].begin() + off + c);
        std::vector<double> want = c ? reference(v) : std::vector<double>();
        for (size_t i = 0; i < c; ++i) {
          double err = std::fabs(got[off + i] - want[i]) / (1.0 + std::fabs(want[i]));
          worst = std::isnan(err) ? INFINITY : std::max(worst, err);
        }
        off += c;
      }
      char what[120];
      std::snprintf(what, sizeof what, "simulated Adasum p=%d over %zu tensors, %zu elements: worst %g", p,
                    counts.size(), n, worst);
      tally.check(worst < 1e-5, what);
    }
  }
}

void testCoefficients(Tally& tally) {
  double a, b;
  lightcc::adasumCoefficients(4.0, 4.0, 4.0, &a, &b);  // identical vectors: their mean
  tally.check(a == 0.5 && b == 0.5, "a (+) a = a");
  lightcc::adasumCoefficients(0.0, 2.0, 3.0, &a, &b);  // orthogonal: plain sum
  tally.check(a == 1.0 && b == 1.0, "orthogonal vectors add");
  lightcc::adasumCoefficients(0.0, 0.0, 3.0, &a, &b);  // zero gradient leaves the other
  tally.check(a == 1.0 && b == 1.0, "a zero vector keeps coefficient 1");
  lightcc::adasumCoefficients(-2.0, 2.0, 8.0, &a, &b);
  tally.check(a == 1.5 && b == 1.125, "opposed vectors");
}

void testDtypes(Tally& tally) {
  const float av[] = {1.0f, -2.0f, 0.5f}, bv[] = {3.0f, 1.0f, -4.0f};
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    std::vector<unsigned char> a(3 * lightcc::dtypeSize(t)), b(a.size());
    for (int i = 0; i < 3; ++i) {
      switch (t) {
        case DataType::kFloat16:
          reinterpret_cast<uint16_t*>(a.data())[i] = lightcc::kernels::floatToHalf(av[i]);
          reinterpret_cast<uint16_t*>(b.data())[i] = lightcc::kernels::floatToHalf(bv[i]);
          break;
        case DataType::kBFloat16:
          reinterpret_cast<uint16_t*>(a.data())[i] = lightcc::kernels::floatToBf16(av[i]);
          reinterpret_cast<uint16_t*>(b.data())[i] = lightcc::kernels::floatToBf16(bv[i]);
          break;
        case DataType::kFloat32:
          reinterpret_cast<float*>(a.data())[i] = av[i], reinterpret_cast<float*>(b.data())[i] = bv[i];
          break;
        default:
          reinterpret_cast<double*>(a.data())[i] = av[i], reinterpret_cast<double*>(b.data())[i] = bv[i];
      }
    }
    auto part = lightcc::adasumPartial(a.data(), b.data(), 3, t);
    tally.check(part.dot == -1.0 && part.anorm == 5.25 && part.bnorm == 26.0,
                std::string("partial dot/norms ") + lightcc::dtypeName(t));
    lightcc::adasumCombine(a.data(), 0.5, b.data(), 2.0, 3, t);  // exact in every type
    auto back = lightcc::adasumPartial(a.data(), a.data(), 3, t);
    // 0.5a + 2b = {6.5, 1, -7.75}: |.|^2 = 42.25 + 1 + 60.0625
    tally.check(back.dot == 103.3125, std::string("combine ") + lightcc::dtypeName(t));
  }
}

void testUnsupported(Tally& tally) {
  tally.check(lightcc::adasumUnsupported(4, DataType::kFloat32).empty(), "4 ranks float32 ok");
  tally.check(lightcc::adasumUnsupported(1, DataType::kFloat16).empty(), "1 rank ok");
  tally.check(lightcc::adasumUnsupported(3, DataType::kFloat32).find("power-of-two") != std::string::npos,
              "3 ranks refused");
  tally.check(lightcc::adasumUnsupported(6, DataType::kFloat64).find("6") != std::string::npos, "6 ranks refused");
  tally.check(lightcc::adasumUnsupported(2, DataType::kInt32).find("int32") != std::string::npos,
              "int32 refused");
}

}  // namespace

int main() {
  Tally tally;
  testCoefficients(tally);
  testDtypes(tally);
  testUnsupported(tally);
  testAgainstReference(tally);
  std::printf("adasum_test: %d passed, %d failed\n", tally.passed, tally.failed);
  return tally.failed == 0 ? 0 : 1;
}
