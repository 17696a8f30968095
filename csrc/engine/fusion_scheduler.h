// Fusion scheduler: decides, per strategy, which agreed responses run this cycle and how fused.
//
// DESIGN. Owned by the engine thread. Every rank feeds it the same agreed response lists in the
// same order (the negotiation guarantees that) and the same flush decisions (agreed through the
// cycle's bit vector), so it is a deterministic state machine whose output is identical on every
// rank without any message of its own.
//
// size  : planFusion over what was agreed this cycle (Horovod).
// order : a tensor's first agreement assigns it, in that (backward) order, to a bucket: the first
//         bucket of each dtype/op class holds `first_bucket` bytes, later ones `bucket`. Afterwards
//         an agreed tensor is held until every member of its bucket is agreed (held at once),
//         then the bucket runs as one fused response.
// cost  : order, with `bucket`/`first_bucket` taken from the alpha-beta model (engine/cost_model).
// size, paced (LIGHT_DEVICE_INFLIGHT, engine/device_pacing.h): GPU allreduces agreed while the
//         plan says some rank's GPU is still busy are held, and run fused with the next ones
//         once every rank's is ready (or at a flush).
// Flush: when asked (a caller blocks on a held tensor, nothing new for LIGHT_FUSION_FLUSH_MS,
// join, shutdown) every held tensor runs now; so does the cycle of a process-set change. A member
// missing at kEvictAfterMisses flushes of its bucket in a row leaves the plan (an unused
// parameter); if it comes back it re-enters as a new tensor at the tail.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "engine/fusion.h"
#include "engine/request.h"

namespace lightcc {

class FusionScheduler {
 public:
  using Key = std::pair<int32_t, std::string>;  // process set id, tensor name
  struct Options {
    FusionStrategy strategy = FusionStrategy::kSize;
    int64_t threshold = 0;     // HOROVOD_FUSION_THRESHOLD: largest fused response (0 = no fusion)
    int64_t first_bucket = 0;  // order/cost: first bucket of each class
    int64_t bucket = 0;        // order/cost: later buckets
    bool pace_device = false;  // size: hold GPU allreduces while the plan says a GPU is busy
  };
  // `kind(r)` (as planFusion's): non-zero ones are never held (tensors top-k compresses); they
  // fuse only with their own kind, or, at -1, with nothing.
  FusionScheduler(const Options& options, std::function<int(const Response&)> kind);

  // This cycle's agreed responses in, what to execute now out (in order).
  // `device_ready`: the plan's agreed vote that every rank may start another GPU batch.
  std::vector<ResponsePtr> schedule(const std::vector<ResponsePtr>& agreed, bool flush, bool device_ready = true);

  bool holding() const { return held_ > 0; }
  size_t heldCount() const { return held_; }
  size_t pacedCount() const { return paced_.size(); }  // of heldCount(): held for a busy GPU
  // True if `pred` holds for some held tensor (agreed everywhere, waiting for its bucket).
  bool anyHeld(const std::function<bool(const Key&)>& pred) const;
  // Seconds since a bucketed tensor was last agreed (the flush timer).
  double idleSeconds() const;
  const Options& options() const { return options_; }
  size_t bucketCount() const { return buckets_.size(); }
  // Of bucketCount(): those with members (evictions can empty one; it stays as a slot).
  size_t plannedBuckets() const { return planned_; }
  uint64_t flushes() const { return flushes_; }

 private:
  struct Bucket {
    std::vector<Key> members;          // first-seen order
    int64_t bytes = 0;
    std::map<Key, ResponsePtr> arrived;  // agreed this round, not yet run
    std::map<Key, int> misses;         // flushes of this bucket in a row without this member
  };
  static constexpr int kEvictAfterMisses = 3;
  bool bucketable(const Response& r) const;
  bool paceable(const Response& r) const;
  std::vector<ResponsePtr> pace(const std::vector<ResponsePtr>& agreed, bool flush, bool device_ready);
  size_t assign(const Key& key, const Response& r);
  void flushBucket(Bucket& b, std::vector<ResponsePtr>* out);
  void release(Bucket& b, std::vector<ResponsePtr>* out);

  Options options_;
  std::function<int(const Response&)> kind_;
  FusedMemo memo_;
  std::vector<Bucket> buckets_;
  std::map<Key, size_t> bucket_of_;
  struct OpenBucket {
    size_t index = 0;  // the bucket new tensors of this class join
    int opened = 0;    // buckets this class has had (1 = the open one is its first)
  };
  std::map<std::string, OpenBucket> open_;  // by fusable class
  size_t held_ = 0;
  size_t planned_ = 0;  // buckets with members, kept as they change (published every cycle)
  std::vector<ResponsePtr> paced_;  // size strategy: GPU allreduces waiting for every GPU to be ready
  uint64_t flushes_ = 0;
  std::chrono::steady_clock::time_point last_arrival_ = std::chrono::steady_clock::now();
};

}  // namespace lightcc
