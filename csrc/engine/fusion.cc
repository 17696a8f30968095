// Fusion planner: greedy first-fit into open buckets keyed by the allreduce's parameters.
#include "engine/fusion.h"

#include "engine/op_traits.h"

#include <tuple>

namespace lightcc {

int64_t tensorBytes(const Response& r, size_t tensor_index) {
  int64_t n = static_cast<int64_t>(dtypeSize(r.dtype));
  for (int64_t d : r.shapes[tensor_index]) n *= d;
  return n;
}

namespace {
bool fusable(const Response& a, const Response& b) {
  return std::tie(a.op, a.dtype, a.reduce_op, a.prescale, a.postscale, a.process_set_id, a.on_device) ==
         std::tie(b.op, b.dtype, b.reduce_op, b.prescale, b.postscale, b.process_set_id, b.on_device);
}
}  // namespace

ResponsePtr FusedMemo::find(const std::vector<const ResponsePtr*>& members) const {
  for (auto e = entries_.rbegin(); e != entries_.rend(); ++e) {
    if (e->members.size() != members.size()) continue;
    size_t i = 0;
    while (i < members.size() && e->members[i] == *members[i]) ++i;
    if (i == members.size()) return e->fused;
  }
  return nullptr;
}

void FusedMemo::remember(const std::vector<const ResponsePtr*>& members, ResponsePtr fused) {
  if (entries_.size() == kEntries) entries_.erase(entries_.begin());
  Entry e;
  e.members.reserve(members.size());
  for (const ResponsePtr* m : members) e.members.push_back(*m);
  e.fused = std::move(fused);
  entries_.push_back(std::move(e));
}

std::vector<ResponsePtr> planFusion(const std::vector<ResponsePtr>& responses, int64_t threshold_bytes,
                                    const std::function<int(const Response&)>& kind, FusedMemo* memo) {
  // Buckets are first collected as member lists and only then merged, so a bucket that ends up
  // with one member is passed on without building a new response.
  struct Bucket {
    std::vector<const ResponsePtr*> members;
    int64_t bytes = -1;  // -1 = closed to fusion
    size_t tensors = 0;
    int kind = 0;
  };
  std::vector<Bucket> buckets;
  buckets.reserve(responses.size());
  for (const ResponsePtr& p : responses) {
    const Response& r = *p;
    const int k = kind ? kind(r) : 0;
    bool candidate = threshold_bytes > 0 && canFuse(r.op) && !r.isError() && k >= 0;
    int64_t bytes = 0;
    for (size_t i = 0; candidate && i < r.names.size(); ++i) bytes += tensorBytes(r, i);
    if (candidate && bytes <= threshold_bytes) {
      bool placed = false;
      for (Bucket& b : buckets) {
        if (b.bytes >= 0 && b.kind == k && fusable(**b.members.front(), r) && b.bytes + bytes <= threshold_bytes) {
          b.members.push_back(&p);
          b.bytes += bytes;
          b.tensors += r.names.size();
          placed = true;
          break;
        }
      }
      if (placed) continue;
      buckets.push_back({{&p}, bytes, r.names.size(), k});
    } else {
      buckets.push_back({{&p}, -1, r.names.size(), k});
    }
  }
  std::vector<ResponsePtr> out;
  out.reserve(buckets.size());
  for (const Bucket& b : buckets) {
    if (b.members.size() == 1) {
      out.push_back(*b.members.front());
      continue;
    }
    if (memo != nullptr) {
      if (ResponsePtr same = memo->find(b.members)) {
        out.push_back(std::move(same));
        continue;
      }
    }
    auto fused = std::make_shared<Response>(**b.members.front());
    fused->names.reserve(b.tensors);
    fused->shapes.reserve(b.tensors);
    for (size_t m = 1; m < b.members.size(); ++m) {
      const Response& r = **b.members[m];
      fused->names.insert(fused->names.end(), r.names.begin(), r.names.end());
      fused->shapes.insert(fused->shapes.end(), r.shapes.begin(), r.shapes.end());
    }
    if (memo != nullptr) memo->remember(b.members, fused);
    out.push_back(std::move(fused));
  }
  return out;
}

}  // namespace lightcc
