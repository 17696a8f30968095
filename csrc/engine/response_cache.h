// ResponseCache: negotiated single-tensor responses by name, each owning one bit position.
//
// DESIGN. Every rank holds an identical cache: entries are inserted, touched and evicted only
// while processing the agreed response list of a cycle, in list order, so bit positions match
// across ranks. The engine thread owns it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/request.h"

namespace lightcc {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity) : capacity_(capacity), slots_(capacity) {}

  size_t capacity() const { return capacity_; }
  // One past the highest occupied bit: the per-cycle scans stop here (slots fill from the bottom,
  // so a cache holding a model's few hundred tensors is not scanned to its full capacity).
  size_t extent() const { return extent_; }
  // Bit of (set, name) or -1.
  int find(int32_t process_set_id, const std::string& name) const;
  const Request& request(int bit) const { return slots_[bit]->request; }
  const Response& response(int bit) const { return slots_[bit]->response; }
  bool occupied(int bit) const { return slots_[bit].has_value(); }

  // Inserts or replaces; evicts the least recently used entry when full. `local` is this rank's
  // own request for the tensor (null on ranks that did not submit it: non-members, joined
  // ranks); each rank keeps its own, since e.g. allgather's first dimension differs per rank.
  void put(const Request* local, const Response& response, uint64_t cycle);
  // Does this rank's new request repeat the one it made when the entry was negotiated?
  bool matches(int bit, const Request& local) const;
  void touch(int bit, uint64_t cycle) { slots_[bit]->last_used = cycle; }
  void erase(int bit);
  void clear();

 private:
  struct Slot {
    Request request;  // this rank's request when negotiated
    bool has_local = false;
    Response response;
    uint64_t last_used = 0;
  };
  size_t capacity_;
  size_t extent_ = 0;
  std::vector<std::optional<Slot>> slots_;
  // Ordered by (set, name); transparent so find() needs no key copy (it runs per tensor per step).
  struct KeyLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return a.first != b.first ? a.first < b.first : std::string_view(a.second) < std::string_view(b.second);
    }
  };
  std::map<std::pair<int32_t, std::string>, int, KeyLess> index_;
};

// Which requests are cacheable: data collectives whose response depends only on the signature.
bool isCacheable(OpType op);

}  // namespace lightcc
