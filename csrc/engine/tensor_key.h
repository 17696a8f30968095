// TensorKey: how the engine identifies a tensor — (process set id, name) — and its hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace lightcc {

using TensorKey = std::pair<int32_t, std::string>;

// Hashed rather than ordered: per-step lookups over hundreds of names that share long prefixes
// ("allreduce.layer3.conv2.weight") cost a string compare per tree level otherwise.
struct TensorKeyHash {
  size_t operator()(const TensorKey& k) const noexcept {
    return std::hash<std::string_view>{}(k.second) ^ (static_cast<size_t>(k.first) * 0x9E3779B97F4A7C15ULL);
  }
};

}  // namespace lightcc
