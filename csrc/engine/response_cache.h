// ResponseCache: negotiated single-tensor responses by tensor id, each owning one bit position.
//
// DESIGN. Every rank holds an identical cache: entries are inserted, touched and evicted only
// while processing the agreed response list of a cycle, in list order, so bit positions match
// across ranks. Tensor ids are this rank's own (TensorTable) and never leave it; only bits do.
// Responses are shared and immutable, so a cycle hands the cached ones on to fusion and the
// executor (and stream workers) without copying them. The engine thread owns the cache.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/request.h"

namespace lightcc {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity)
      : capacity_(capacity), slots_(capacity), occupied_((capacity + 63) / 64, 0) {}

  size_t capacity() const { return capacity_; }
  // One past the highest occupied bit: the per-cycle scans stop here (slots fill from the bottom,
  // so a cache holding a model's few hundred tensors is not scanned to its full capacity).
  size_t extent() const { return extent_; }
  // Bit of a tensor id, or -1.
  int find(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < bit_of_.size() ? bit_of_[static_cast<size_t>(id)] : -1;
  }
  const Request& request(int bit) const { return slots_[bit]->request; }
  const Response& response(int bit) const { return *slots_[bit]->response; }
  const ResponsePtr& shared(int bit) const { return slots_[bit]->response; }
  int32_t id(int bit) const { return slots_[bit]->id; }
  bool occupied(int bit) const { return slots_[bit].has_value(); }
  // Occupied bits, 64 to a word, so a cycle scans words rather than every slot.
  uint64_t occupiedWord(size_t w) const { return occupied_[w]; }
  // Changes whenever an entry is inserted, replaced or erased: what is derived from the
  // cache's contents (which sets its entries belong to) is recomputed only then.
  uint64_t generation() const { return generation_; }

  // Inserts or replaces; evicts the least recently used entry when full. `local` is this rank's
  // own request for the tensor (null on ranks that did not submit it: non-members, joined
  // ranks); each rank keeps its own, since e.g. allgather's first dimension differs per rank.
  void put(int32_t id, const Request* local, ResponsePtr response, uint64_t cycle);
  // Does this rank's new request repeat the one it made when the entry was negotiated?
  bool matches(int bit, const Request& local) const;
  void touch(int bit, uint64_t cycle) { slots_[bit]->last_used = cycle; }
  void erase(int bit);
  void clear();

 private:
  struct Slot {
    int32_t id = -1;
    Request request;  // this rank's request when negotiated
    bool has_local = false;
    ResponsePtr response;
    uint64_t last_used = 0;
  };
  size_t capacity_;
  size_t extent_ = 0;
  std::vector<std::optional<Slot>> slots_;
  std::vector<int> bit_of_;  // by tensor id; -1 where not cached
  std::vector<uint64_t> occupied_;
  uint64_t generation_ = 0;
};

// Which requests are cacheable: data collectives whose response depends only on the signature.
bool isCacheable(OpType op);

}  // namespace lightcc
