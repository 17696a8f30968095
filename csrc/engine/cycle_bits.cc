// CycleBits: filling this rank's bit vector (layout in cycle_bits.h) and the mask of sets it is not in.
#include "engine/cycle_bits.h"

#include <algorithm>

namespace lightcc {

bool CycleBits::invalidated(int bit) const {
  return std::find(invalid_bits_.begin(), invalid_bits_.end(), bit) != invalid_bits_.end();
}

// A set's membership never changes under its id, so the mask changes only with the cache's contents.
void CycleBits::updateAbsentMask(const ResponseCache& cache) {
  if (absent_generation_ == cache.generation() && absent_sets_ == main_.comms.size()) return;
  absent_generation_ = cache.generation();
  absent_sets_ = main_.comms.size();
  absent_mask_.assign((cache.capacity() + 63) / 64, 0);
  int32_t run_set = -1;  // entries mostly share one set: one lookup per run of them
  bool run_absent = false;
  for (size_t b = 0; b < cache.extent(); ++b) {
    if (!cache.occupied(b)) continue;
    const int32_t set = cache.response(b).process_set_id;
    if (set != run_set) {
      auto it = main_.comms.find(set);
      run_set = set;
      run_absent = it == main_.comms.end() || !it->second.member();
    }
    if (run_absent) absent_mask_[b / 64] |= uint64_t{1} << (b % 64);
  }
}

void CycleBits::fill(uint64_t status, const uint64_t* tune_vote, const Layout& l, const ResponseCache& cache,
                     const TensorTable& tensors, std::vector<uint64_t>* bits) {
  bits->assign(size(l), 0);
  uint64_t* ready = bits->data() + 1;
  uint64_t* valid = ready + l.words;
  (*bits)[0] = status;
  updateAbsentMask(cache);
  for (size_t w = 0; w < l.used_words; ++w) ready[w] |= absent_mask_[w];
  for (TensorId id : tensors.pending()) {
    const TensorTable::Slot& p = tensors.at(id);
    if (p.state == TensorTable::State::kCached) ready[p.bit / 64] |= uint64_t{1} << (p.bit % 64);
  }
  for (size_t w = 0; w < l.words; ++w) valid[w] = ~uint64_t{0};
  for (int b : invalid_bits_) valid[b / 64] &= ~(uint64_t{1} << (b % 64));
  invalid_bits_.clear();
  uint64_t* tune = valid + l.words;
  for (size_t w = 0; w < tune_words_; ++w) tune[w] = rank0_ ? tune_vote[w] : ~uint64_t{0};
}

}  // namespace lightcc
