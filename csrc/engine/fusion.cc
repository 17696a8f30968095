// Fusion planner: greedy first-fit into open buckets keyed by the allreduce's parameters.
#include "engine/fusion.h"

#include <tuple>

namespace lightcc {

int64_t tensorBytes(const Response& r, size_t tensor_index) {
  int64_t n = static_cast<int64_t>(dtypeSize(r.dtype));
  for (int64_t d : r.shapes[tensor_index]) n *= d;
  return n;
}

namespace {
bool fusable(const Response& a, const Response& b) {
  return std::tie(a.op, a.dtype, a.reduce_op, a.prescale, a.postscale, a.process_set_id) ==
         std::tie(b.op, b.dtype, b.reduce_op, b.prescale, b.postscale, b.process_set_id);
}
}  // namespace

std::vector<Response> planFusion(const std::vector<Response>& responses, int64_t threshold_bytes,
                                 const std::function<bool(const Response&)>& alone) {
  std::vector<Response> out;
  std::vector<int64_t> bucket_bytes;  // parallel to out; -1 = closed to fusion
  for (const Response& r : responses) {
    bool candidate = threshold_bytes > 0 && r.op == OpType::kAllreduce && !r.isError() && !(alone && alone(r));
    int64_t bytes = 0;
    for (size_t i = 0; candidate && i < r.names.size(); ++i) bytes += tensorBytes(r, i);
    if (candidate && bytes <= threshold_bytes) {
      bool placed = false;
      for (size_t b = 0; b < out.size(); ++b) {
        if (bucket_bytes[b] >= 0 && fusable(out[b], r) && bucket_bytes[b] + bytes <= threshold_bytes) {
          for (size_t i = 0; i < r.names.size(); ++i) {
            out[b].names.push_back(r.names[i]);
            out[b].shapes.push_back(r.shapes[i]);
          }
          bucket_bytes[b] += bytes;
          placed = true;
          break;
        }
      }
      if (placed) continue;
      out.push_back(r);
      bucket_bytes.push_back(bytes);
    } else {
      out.push_back(r);
      bucket_bytes.push_back(-1);
    }
  }
  return out;
}

}  // namespace lightcc
