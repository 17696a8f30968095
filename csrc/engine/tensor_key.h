// TensorKey: how the engine identifies a tensor — (process set id, name) — and its hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace lightcc {

using TensorKey = std::pair<int32_t, std::string>;

// Hash of (set, name), eight bytes at a time. Names are hashed several times per tensor per
// step (queue, table, completion) and are mostly 20-60 bytes, where the library's byte-oriented
// hash costs several times more; every byte still counts, since names often differ only in the
// middle ("model.layers.10.attn..." vs "model.layers.11.attn...").
inline size_t hashTensorKey(int32_t set, std::string_view name) noexcept {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  auto mix = [](uint64_t h, uint64_t w) {
    h ^= w;
    h *= 0xFF51AFD7ED558CCDULL;
    return h ^ (h >> 32);
  };
  const char* p = name.data();
  size_t n = name.size();
  uint64_t h = (static_cast<uint64_t>(static_cast<uint32_t>(set)) << 32 | n) * kMul;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = mix(h, w);
  }
  if (n > 0) {
    uint64_t w = 0;
    if (name.size() >= 8) {
      std::memcpy(&w, p + n - 8, 8);  // the last eight bytes, overlapping the words above
    } else {
      std::memcpy(&w, p, n);
    }
    h = mix(h, w ^ (uint64_t{1} << 63));
  }
  return static_cast<size_t>(h ^ (h >> 29));
}

// Hashed rather than ordered: per-step lookups over hundreds of names that share long prefixes
// ("allreduce.layer3.conv2.weight") cost a string compare per tree level otherwise.
struct TensorKeyHash {
  size_t operator()(const TensorKey& k) const noexcept { return hashTensorKey(k.first, k.second); }
  size_t operator()(const std::pair<int32_t, std::string_view>& k) const noexcept {
    return hashTensorKey(k.first, k.second);
  }
};

}  // namespace lightcc
