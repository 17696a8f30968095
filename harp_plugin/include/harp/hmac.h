// SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), self-contained so the plugin has no deps.
// The one implementation in the tree: others link it as the CMake target harp_hmac.
#pragma once

#include <cstddef>
#include <cstdint>

namespace harp {

constexpr size_t kSha256Bytes = 32;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t len);
  void finish(uint8_t out[kSha256Bytes]);

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Incremental HMAC-SHA256: init with the key, update with message parts, finish.
class HmacSha256 {
 public:
  HmacSha256(const void* key, size_t key_len);
  void update(const void* data, size_t len) { inner_.update(data, len); }
  void finish(uint8_t out[kSha256Bytes]);

 private:
  Sha256 inner_;
  uint8_t opad_key_[64];
};

// Constant-time comparison of two MACs.
bool harpMacEqual(const uint8_t* a, const uint8_t* b, size_t n);

}  // namespace harp
