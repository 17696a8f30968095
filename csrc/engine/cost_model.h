// Cost model: alpha-beta fits per link class, probed once at init, and the predictions fusion uses.
//
// A link class is how two ranks reach each other: "shm" (same host) or "net" (different hosts).
// Each class gets t(M) = alpha + beta * M from a ping-pong between rank 0 and one peer of that
// class; rank 0's fit is passed along the world ring, so every rank plans with identical numbers. The
// collective formulas are those of docs/algorithms.md; the model counts the wire (and, for top-k,
// the selection pass measured on rank 0's CPU), not the engine's own per-collective overhead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/set_comm.h"
#include "common/status.h"

namespace lightcc {

struct LinkFit {
  bool present = false;
  double alpha = 0.0;  // seconds per message
  double beta = 0.0;   // seconds per byte
};

// Least-squares line through (bytes, seconds), alpha clamped at zero; a slope noise made zero or
// negative becomes the largest sample's seconds per byte (an upper bound: bytes are never free).
LinkFit fitAlphaBeta(const std::vector<double>& bytes, const std::vector<double>& seconds);

struct CostModel {
  LinkFit shm, net;
  double select_per_byte = 0.0;  // top-k selection, seconds per gradient byte (0 = not measured)
  int ranks = 1, hosts = 1, per_host = 1;
  bool hierarchical = false;     // LIGHT_2D_ALLREDUCE applies to the world set
  double probe_ms = 0.0;         // how long the probe took on rank 0
  int64_t rd_max_bytes = 0;      // LIGHTCC_RD_ALLREDUCE_BYTES (pickAlgorithm's recursive-doubling cut)

  // Predicted time of one allreduce of m bytes with the executor's algorithm: a + b * m.
  // (the ring or the shared-memory or 2D schedule; for fusion buckets, which are large).
  void dense(double* a, double* b) const;
  // Predicted seconds of one allreduce of m bytes with the algorithm pickAlgorithm() gives it:
  // recursive doubling for a flat cross-host allreduce up to rd_max_bytes, else dense().
  double allreduceSeconds(double m) const;
  // Recursive doubling's predicted time over the net: rounds x (alpha + m beta).
  double recursiveDoublingSeconds(double m) const;
  // Largest m at which recursive doubling is predicted no slower than the flat ring over the
  // net (0 on one host or without a net fit): a value for LIGHTCC_RD_ALLREDUCE_BYTES.
  int64_t rdCrossoverBytes() const;
  void topk(double density, double* a, double* b) const;
  // Bytes at which a dense allreduce is 95 % bandwidth-bound (19 x a/b), within [64 KiB, cap].
  int64_t bucketBytes(int64_t cap) const;
  // The first bucket: 80 % bandwidth-bound (4 x a/b), within [16 KiB, bucket].
  int64_t firstBucketBytes(int64_t bucket) const;
  // Smallest tensor for which top-k is predicted faster than its dense, fused (alpha already
  // paid by the bucket) share; INT64_MAX when top-k never wins on this cluster.
  int64_t topkThresholdBytes(double density) const;
  std::string describe() const;
};

// Top-k's fallback, per batch: true when the sparse exchange of `pairs` pairs over p members
// moves fewer bytes per rank than a dense ring allreduce of `count` elements of `esize` bytes
// (sparse_allreduce.h's and collectives.h's byte counts). Always true for one member, whose
// residuals behave as at any size.
bool sparseMovesFewerBytes(int p, size_t count, size_t esize, size_t pairs);

// Collective: every rank of `world` calls it at the same point, before any other traffic on the
// links. `hosts[r]` is rank r's host id.
Status probeCostModel(const SetComm& world, const std::vector<std::string>& hosts, bool hierarchical,
                      bool measure_selection, double density, CostModel* out);

}  // namespace lightcc
