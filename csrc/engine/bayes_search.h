// BayesSearch: the autotuner's last stage — a Gaussian-process search over the numeric parameters (unit cube).
//
// DESIGN. Owned by the Autotuner (autotuner.h), rank 0's driving thread only. Each proposal is
// the best of kEiCandidates random points by expected improvement (RBF kernel) over the scores
// measured so far; a fixed xorshift seed keeps a run's proposals reproducible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lightcc {

class BayesSearch {
 public:
  // `samples` proposals to make after the first observation (x, y), already measured.
  void start(std::vector<double> x, double y, int64_t samples);
  void observe(std::vector<double> x, double y);  // a measured proposal
  // The next point to measure; false once the budget is spent.
  bool next(double noise, std::vector<double>* x);

 private:
  std::vector<std::vector<double>> x_;  // observations (unit cube) and their scores
  std::vector<double> y_;
  int64_t left_ = 0;
  uint64_t rng_ = 0x9E3779B97F4A7C15ULL;
};

// Gaussian-process regression + expected improvement, unit-cube inputs (exposed for tests).
// Returns the candidate of `candidates` with the largest expected improvement over max(y).
size_t pickByExpectedImprovement(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                                 const std::vector<std::vector<double>>& candidates, double noise,
                                 double length_scale = 0.3);

}  // namespace lightcc
