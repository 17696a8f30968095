// Fusion scheduler: bucket assignment, per-round completion, flush and eviction.
#include "engine/fusion_scheduler.h"

#include <cstring>

#include "engine/fusion.h"

namespace lightcc {
namespace {

// Tensors fuse only with the same dtype, reduce op, scales and process set.
std::string fusableClass(const Response& r) {
  uint64_t pre = 0, post = 0;
  std::memcpy(&pre, &r.prescale, sizeof(pre));
  std::memcpy(&post, &r.postscale, sizeof(post));
  return std::to_string(static_cast<int>(r.dtype)) + "/" + std::to_string(static_cast<int>(r.reduce_op)) + "/" +
         std::to_string(pre) + "/" + std::to_string(post) + "/" + std::to_string(r.process_set_id);
}

}  // namespace

FusionScheduler::FusionScheduler(const Options& options, std::function<bool(const Response&)> alone)
    : options_(options), alone_(std::move(alone)) {}

bool FusionScheduler::bucketable(const Response& r) const {
  return options_.strategy != FusionStrategy::kSize && options_.threshold > 0 && r.op == OpType::kAllreduce &&
         !r.isError() && r.names.size() == 1 && !(alone_ && alone_(r));
}

size_t FusionScheduler::assign(const Key& key, const Response& r) {
  const int64_t bytes = tensorBytes(r, 0);
  OpenBucket& open = open_[fusableClass(r)];
  // The first bucket of a class closes at first_bucket bytes so its tensors (the last layers')
  // leave while the backward pass still runs; a tensor bigger than a bucket gets one to itself.
  const int64_t cap = open.opened <= 1 ? options_.first_bucket : options_.bucket;
  if (open.opened == 0 || (buckets_[open.index].bytes > 0 && buckets_[open.index].bytes + bytes > cap)) {
    buckets_.emplace_back();
    open.index = buckets_.size() - 1;
    ++open.opened;
  }
  Bucket& b = buckets_[open.index];
  b.members.push_back(key);
  b.bytes += bytes;
  bucket_of_[key] = open.index;
  return open.index;
}

void FusionScheduler::endRound(Bucket& b) {
  std::vector<Key> kept;
  for (const Key& k : b.members) {
    if (b.done.count(k) || b.arrived.count(k)) {
      kept.push_back(k);
    } else {
      bucket_of_.erase(k);  // missed a whole round: unused, or not every step
    }
  }
  b.members = std::move(kept);
  b.done.clear();
}

void FusionScheduler::release(Bucket& b, std::vector<Response>* out) {
  for (const Key& k : b.members) {
    auto it = b.arrived.find(k);
    if (it == b.arrived.end()) continue;
    out->push_back(std::move(it->second));
    b.done.insert(k);
    b.arrived.erase(it);
    --held_;
  }
  if (b.done.size() == b.members.size()) b.done.clear();  // round complete
}

void FusionScheduler::releaseIfComplete(Bucket& b, std::vector<Response>* out) {
  for (const Key& k : b.members) {
    if (!b.done.count(k) && !b.arrived.count(k)) return;
  }
  release(b, out);
}

std::vector<Response> FusionScheduler::schedule(const std::vector<Response>& agreed, bool flush) {
  if (options_.strategy == FusionStrategy::kSize || options_.threshold <= 0) {
    return planFusion(agreed, options_.threshold, alone_);
  }
  std::vector<Response> now, released;
  for (const Response& r : agreed) {
    if (r.op == OpType::kAddProcessSet || r.op == OpType::kRemoveProcessSet) flush = true;
    if (!bucketable(r)) {
      // An error for a bucket member ends its part of the round: the bucket must not wait for it.
      for (const auto& n : r.names) {
        auto it = bucket_of_.find({r.process_set_id, n});
        if (it != bucket_of_.end()) buckets_[it->second].done.insert(it->first);
      }
      now.push_back(r);
      continue;
    }
    last_arrival_ = std::chrono::steady_clock::now();
    const Key key{r.process_set_id, r.names.front()};
    auto it = bucket_of_.find(key);
    if (it == bucket_of_.end()) {
      // First sighting: run it now (nothing to wait for yet) and remember its place.
      Bucket& b = buckets_[assign(key, r)];
      b.done.insert(key);
      now.push_back(r);
      releaseIfComplete(b, &released);
      continue;
    }
    Bucket& b = buckets_[it->second];
    if (b.arrived.count(key)) release(b, &released);  // a name reused while held: keep both
    if (b.done.count(key)) endRound(b);  // it already ran this round: this is the next step
    b.arrived[key] = r;
    ++held_;
    releaseIfComplete(b, &released);
  }
  if (flush && held_ > 0) {
    ++flushes_;
    for (Bucket& b : buckets_) {
      if (!b.arrived.empty()) release(b, &released);
    }
  }
  std::vector<Response> out = planFusion(released, options_.threshold, alone_);
  std::vector<Response> rest = planFusion(now, options_.threshold, alone_);
  out.insert(out.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
  return out;
}

std::vector<FusionScheduler::Key> FusionScheduler::heldKeys() const {
  std::vector<Key> keys;
  for (const Bucket& b : buckets_) {
    for (const auto& [k, r] : b.arrived) keys.push_back(k);
  }
  return keys;
}

double FusionScheduler::idleSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_arrival_).count();
}

}  // namespace lightcc
