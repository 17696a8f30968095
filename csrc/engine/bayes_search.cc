// BayesSearch: the Gaussian process (RBF kernel, Cholesky solve) and expected improvement over random candidates.
#include "engine/bayes_search.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace lightcc {
namespace {

constexpr int kEiCandidates = 512;

double rbf(const std::vector<double>& a, const std::vector<double>& b, double l) {
  double d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (a[i] - b[i]) * (a[i] - b[i]);
  return std::exp(-0.5 * d2 / (l * l));
}

// Lower-triangular Cholesky factor of a symmetric positive-definite matrix (row-major, in place).
void cholesky(std::vector<double>* a, size_t n) {
  std::vector<double>& m = *a;
  for (size_t j = 0; j < n; ++j) {
    double d = m[j * n + j];
    for (size_t k = 0; k < j; ++k) d -= m[j * n + k] * m[j * n + k];
    d = std::sqrt(std::max(d, 1e-12));
    m[j * n + j] = d;
    for (size_t i = j + 1; i < n; ++i) {
      double s = m[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= m[i * n + k] * m[j * n + k];
      m[i * n + j] = s / d;
    }
    for (size_t k = j + 1; k < n; ++k) m[j * n + k] = 0.0;
  }
}

// Solves L y = b (forward) or L^T y = b (backward).
std::vector<double> solveTri(const std::vector<double>& l, size_t n, std::vector<double> b, bool transpose) {
  if (!transpose) {
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < i; ++k) b[i] -= l[i * n + k] * b[k];
      b[i] /= l[i * n + i];
    }
  } else {
    for (size_t i = n; i-- > 0;) {
      for (size_t k = i + 1; k < n; ++k) b[i] -= l[k * n + i] * b[k];
      b[i] /= l[i * n + i];
    }
  }
  return b;
}
}  // namespace

size_t pickByExpectedImprovement(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                                 const std::vector<std::vector<double>>& candidates, double noise,
                                 double length_scale) {
  const size_t n = x.size();
  if (n == 0 || candidates.empty()) return 0;
  // Normalise the scores: mean 0, sd 1 (the noise is relative to that).
  double mean = 0, sd = 0;
  for (double v : y) mean += v;
  mean /= n;
  for (double v : y) sd += (v - mean) * (v - mean);
  sd = n > 1 ? std::sqrt(sd / n) : 0.0;
  if (sd <= 0) sd = 1.0;
  std::vector<double> yn(n);
  for (size_t i = 0; i < n; ++i) yn[i] = (y[i] - mean) / sd;
  std::vector<double> k(n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) k[i * n + j] = rbf(x[i], x[j], length_scale) + (i == j ? noise : 0.0);
  }
  cholesky(&k, n);
  const std::vector<double> alpha = solveTri(k, n, solveTri(k, n, yn, false), true);
  const double best = *std::max_element(yn.begin(), yn.end());
  constexpr double kXi = 0.01;
  size_t pick = 0;
  double pick_ei = -1;
  std::vector<double> ks(n);
  for (size_t c = 0; c < candidates.size(); ++c) {
    for (size_t i = 0; i < n; ++i) ks[i] = rbf(candidates[c], x[i], length_scale);
    double mu = 0;
    for (size_t i = 0; i < n; ++i) mu += ks[i] * alpha[i];
    const std::vector<double> v = solveTri(k, n, ks, false);
    double var = 1.0;
    for (double e : v) var -= e * e;
    const double s = std::sqrt(std::max(var, 1e-12));
    const double z = (mu - best - kXi) / s;
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
    const double ei = (mu - best - kXi) * cdf + s * pdf;
    if (ei > pick_ei) {
      pick_ei = ei;
      pick = c;
    }
  }
  return pick;
}

void BayesSearch::start(std::vector<double> x, double y, int64_t samples) {
  left_ = samples;
  x_ = {std::move(x)};
  y_ = {y};
}

void BayesSearch::observe(std::vector<double> x, double y) {
  x_.push_back(std::move(x));
  y_.push_back(y);
}

bool BayesSearch::next(double noise, std::vector<double>* x) {
  if (left_ <= 0) return false;
  --left_;
  const size_t dims = x_.front().size();
  std::vector<std::vector<double>> cands(kEiCandidates, std::vector<double>(dims));
  for (auto& c : cands) {
    for (auto& v : c) {
      rng_ ^= rng_ << 13;
      rng_ ^= rng_ >> 7;
      rng_ ^= rng_ << 17;
      v = static_cast<double>(rng_ >> 11) / static_cast<double>(uint64_t{1} << 53);
    }
  }
  *x = std::move(cands[pickByExpectedImprovement(x_, y_, cands, noise)]);
  return true;
}

}  // namespace lightcc
