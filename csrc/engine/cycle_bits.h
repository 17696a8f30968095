// CycleBits: this rank's negotiation bit vector for a cycle, and where to read the AND of everyone's.
//
// DESIGN. Owned by the Negotiator (negotiator.h), driving thread only. The vector (uint64
// words, AND-reduced across all ranks by BitExchange):
//   word 0         status bits, most inverted so AND acts as OR: 1 = "nothing uncached to send",
//                  2 = "no shutdown requested", 4 = "not joined", 8 = "coordinator has nothing",
//                  16 = "nothing pending here", 64 = "my shutdown grace has not expired",
//                  128 = "I do not need held (bucketed) tensors run now", 256 = "my GPU may start
//                  another batch"; and one plain AND: 32 = "I asked to shut down".
//   words 1..W     ready bits: cache entry b is pending here (or this rank is not in its set).
//   words W+1..2W  valid bits: cleared where this rank's request disagrees with entry b.
//   words 2W+1..   with HOROVOD_AUTOTUNE only: kTuneWords tuning words, rank 0's (the others
//                  send all ones), so every rank reads the autotuner's choice in the same cycle.
// After the AND every rank knows the same facts, so every rank takes the same branch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/autotuner.h"
#include "engine/channel.h"
#include "engine/response_cache.h"
#include "engine/tensor_table.h"

namespace lightcc {

class CycleBits {
 public:
  // Word 0 (see above).
  static constexpr uint64_t kNothingToSend = 1, kNoShutdown = 2, kNotJoined = 4, kCoordinatorIdle = 8,
                            kNothingPending = 16, kAllAsked = 32, kNoForce = 64, kNoFlush = 128,
                            kDeviceReady = 256;
  // The vector's size: `words` per bit section (the cache's capacity), `used_words` of them
  // holding occupied entries (the cache's extent: bits above it are free everywhere).
  struct Layout {
    size_t words;
    size_t used_words;
  };

  CycleBits(const Channel& main, bool rank0, bool autotune)
      : main_(main), rank0_(rank0), tune_words_(autotune ? kTuneWords : 0) {}

  static Layout layout(const ResponseCache& cache) { return {(cache.capacity() + 63) / 64, (cache.extent() + 63) / 64}; }
  size_t size(const Layout& l) const { return 1 + 2 * l.words + tune_words_; }  // in words
  size_t tuneWords() const { return tune_words_; }

  // This rank disagrees with cache entry `bit`: every rank drops it next cycle.
  void invalidate(int bit) { invalid_bits_.push_back(bit); }
  bool invalidated(int bit) const;
  // This rank's whole vector: `status` (word 0), ready bits of its cached pending tensors (and of
  // entries of sets it is not in), valid bits with its disagreements cleared, rank 0's tuning words.
  void fill(uint64_t status, const uint64_t* tune_vote, const Layout& l, const ResponseCache& cache,
            const TensorTable& tensors, std::vector<uint64_t>* bits);

  // Sections of an agreed vector.
  static const uint64_t* ready(const std::vector<uint64_t>& bits) { return bits.data() + 1; }
  static const uint64_t* valid(const std::vector<uint64_t>& bits, const Layout& l) { return bits.data() + 1 + l.words; }
  static const uint64_t* tune(const std::vector<uint64_t>& bits, const Layout& l) {
    return bits.data() + 1 + 2 * l.words;
  }

 private:
  // Entries of sets this rank is not in are always "ready" here.
  void updateAbsentMask(const ResponseCache& cache);

  const Channel& main_;  // which sets this rank is a member of
  const bool rank0_;
  const size_t tune_words_;  // kTuneWords with HOROVOD_AUTOTUNE, else 0
  std::vector<int> invalid_bits_;  // this rank's mismatches against the cache, this cycle
  std::vector<uint64_t> absent_mask_;  // cache bits of sets this rank is not in
  uint64_t absent_generation_ = ~uint64_t{0};  // the cache generation absent_mask_ was built for
  size_t absent_sets_ = 0;
};

}  // namespace lightcc
