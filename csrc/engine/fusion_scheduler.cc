// Fusion scheduler: bucket assignment, holding until complete, flush and eviction.
#include "engine/fusion_scheduler.h"

#include <cstring>

#include "common/logging.h"
#include "engine/fusion.h"
#include "engine/op_traits.h"

namespace lightcc {
namespace {

// Tensors fuse only with the same dtype, reduce op, scales, process set and device kind.
std::string fusableClass(const Response& r) {
  uint64_t pre = 0, post = 0;
  std::memcpy(&pre, &r.prescale, sizeof(pre));
  std::memcpy(&post, &r.postscale, sizeof(post));
  return std::to_string(static_cast<int>(r.dtype)) + "/" + std::to_string(static_cast<int>(r.reduce_op)) + "/" +
         std::to_string(pre) + "/" + std::to_string(post) + "/" + std::to_string(r.process_set_id) +
         (r.on_device ? "/gpu" : "");
}

}  // namespace

FusionScheduler::FusionScheduler(const Options& options, std::function<int(const Response&)> kind)
    : options_(options), kind_(std::move(kind)) {}

bool FusionScheduler::bucketable(const Response& r) const {
  return options_.strategy != FusionStrategy::kSize && options_.threshold > 0 && canFuse(r.op) &&
         !r.isError() && r.names.size() == 1 && !(kind_ && kind_(r) != 0);
}

bool FusionScheduler::paceable(const Response& r) const {
  return options_.pace_device && options_.threshold > 0 && r.on_device && canFuse(r.op) && !r.isError() && r.names.size() == 1 &&
         !(kind_ && kind_(r) != 0);
}

std::vector<ResponsePtr> FusionScheduler::pace(const std::vector<ResponsePtr>& agreed, bool flush, bool device_ready) {
  std::vector<ResponsePtr> now;
  now.reserve(paced_.size() + agreed.size());
  bool release = flush || device_ready;
  for (const ResponsePtr& p : agreed) {
    if (changesSets(p->op)) release = true;
  }
  if (release && !paced_.empty()) {
    // Held ones were agreed first: they lead, and fuse with this cycle's.
    if (flush && !device_ready) ++flushes_;
    held_ -= paced_.size();
    now.insert(now.end(), std::make_move_iterator(paced_.begin()), std::make_move_iterator(paced_.end()));
    paced_.clear();
  }
  for (const ResponsePtr& p : agreed) {
    if (!release && paceable(*p)) {
      paced_.push_back(p);
      ++held_;
      last_arrival_ = std::chrono::steady_clock::now();
    } else {
      now.push_back(p);
    }
  }
  return planFusion(now, options_.threshold, kind_, &memo_);
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
  if (b.members.empty()) ++planned_;
  b.members.push_back(key);
  b.bytes += bytes;
  bucket_of_[key] = open.index;
  return open.index;
}

void FusionScheduler::flushBucket(Bucket& b, std::vector<ResponsePtr>* out) {
  if (b.arrived.empty()) return;
  std::vector<Key> kept;
  for (const Key& k : b.members) {
    if (!b.arrived.count(k)) {
      LIGHTCC_LOG(kTrace) << "fusion: flushed a bucket without '" << k.second << "'";
    }
    if (b.arrived.count(k) || ++b.misses[k] < kEvictAfterMisses) {
      kept.push_back(k);
      continue;
    }
    LIGHTCC_LOG(kDebug) << "fusion: tensor '" << k.second << "' was missing at " << kEvictAfterMisses
                        << " flushes of its bucket in a row; it leaves the plan";
    b.misses.erase(k);
    bucket_of_.erase(k);
  }
  if (kept.empty() && !b.members.empty()) --planned_;
  b.members = std::move(kept);
  release(b, out);
}

void FusionScheduler::release(Bucket& b, std::vector<ResponsePtr>* out) {
  for (const Key& k : b.members) {
    auto it = b.arrived.find(k);
    if (it == b.arrived.end()) continue;
    out->push_back(std::move(it->second));
    b.arrived.erase(it);
    --held_;
  }
}

std::vector<ResponsePtr> FusionScheduler::schedule(const std::vector<ResponsePtr>& agreed, bool flush,
                                                   bool device_ready) {
  if (options_.strategy == FusionStrategy::kSize || options_.threshold <= 0) {
    if (options_.pace_device || !paced_.empty()) return pace(agreed, flush, device_ready);
    return planFusion(agreed, options_.threshold, kind_, &memo_);
  }
  std::vector<ResponsePtr> now, released;
  for (const ResponsePtr& p : agreed) {
    const Response& r = *p;
    if (changesSets(r.op)) flush = true;
    if (!bucketable(r)) {
      now.push_back(p);
      continue;
    }
    last_arrival_ = std::chrono::steady_clock::now();
    const Key key{r.process_set_id, r.names.front()};
    auto it = bucket_of_.find(key);
    if (it == bucket_of_.end()) {
      assign(key, r);  // first sighting: run it now (nothing to wait for yet), remember its place
      now.push_back(p);
      continue;
    }
    Bucket& b = buckets_[it->second];
    if (b.arrived.count(key)) release(b, &released);  // a name reused while held: keep both
    b.misses.erase(key);
    b.arrived[key] = p;
    ++held_;
    if (b.arrived.size() == b.members.size()) release(b, &released);  // the whole bucket is agreed
  }
  if (flush && held_ > 0) {
    ++flushes_;
    LIGHTCC_LOG(kDebug) << "fusion: flushing " << held_ << " held tensors";
    for (Bucket& b : buckets_) flushBucket(b, &released);
  }
  std::vector<ResponsePtr> out = planFusion(released, options_.threshold, kind_, &memo_);
  std::vector<ResponsePtr> rest = planFusion(now, options_.threshold, kind_, &memo_);
  out.insert(out.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
  return out;
}

bool FusionScheduler::anyHeld(const std::function<bool(const Key&)>& pred) const {
  for (const ResponsePtr& p : paced_) {
    if (pred(Key{p->process_set_id, p->names.front()})) return true;
  }
  for (const Bucket& b : buckets_) {
    for (const auto& [k, r] : b.arrived) {
      if (pred(k)) return true;
    }
  }
  return false;
}

double FusionScheduler::idleSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_arrival_).count();
}

}  // namespace lightcc
