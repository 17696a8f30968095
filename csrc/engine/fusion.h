// Fusion planner: groups an agreed response list into fused responses; pure and deterministic.
#pragma once

#include <cstdint>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "engine/request.h"

namespace lightcc {

// Bytes of one tensor of a response (product of its shape times the dtype size).
int64_t tensorBytes(const Response& r, size_t tensor_index);

// Fused responses built recently, reused while a bucket has exactly the same members again —
// the same cached responses agreed in the same order, as in every steady training step — so a
// fused response of hundreds of tensors is not rebuilt (a name and a shape copied per tensor)
// every step. It keeps its members alive, so equal pointers mean equal responses.
class FusedMemo {
 public:
  ResponsePtr find(const std::vector<const ResponsePtr*>& members) const;
  void remember(const std::vector<const ResponsePtr*>& members, ResponsePtr fused);

 private:
  static constexpr size_t kEntries = 16;
  struct Entry {
    std::vector<ResponsePtr> members;
    ResponsePtr fused;
  };
  std::vector<Entry> entries_;  // most recent last
};

// Merges allreduce responses that share dtype, reduce op, scales and process set into fused
// responses of at most `threshold_bytes` (0 disables fusion). Other responses pass through.
// A fused response keeps the position of its first member; the order inside it is list order.
// Every rank calls this on the same list and gets the same plan. A response that fuses with
// nothing is passed on as it is (shared, not copied).
// `kind(r)`: responses fuse only with responses of the same kind (top-k compressed ones apart
// from dense ones); kind -1 is never fused.
std::vector<ResponsePtr> planFusion(const std::vector<ResponsePtr>& responses, int64_t threshold_bytes,
                                    const std::function<int(const Response&)>& kind = nullptr,
                                    FusedMemo* memo = nullptr);

}  // namespace lightcc
