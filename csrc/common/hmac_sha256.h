// SHA-256, HMAC-SHA256, constant-time comparison and OS-random nonces for connection auth.
//
// Own implementation of FIPS 180-4 (SHA-256) and RFC 2104 (HMAC); checked against the FIPS and
// RFC 4231 vectors in tests/cpp/store_test.cc. Used to authenticate rendezvous connections with
// the per-job secret; not meant for bulk data. All functions are thread-safe (no shared state).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace lightcc {

constexpr size_t kSha256DigestBytes = 32;
constexpr size_t kSha256BlockBytes = 64;
using Sha256Digest = std::array<uint8_t, kSha256DigestBytes>;

// Incremental SHA-256: update() any number of times, then finish() once.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(const std::string& data) { update(data.data(), data.size()); }
  // Pads, returns the digest and leaves the object spent (reset() to reuse).
  Sha256Digest finish();
  void reset();

 private:
  void compressBlock(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, kSha256BlockBytes> buffer_;
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

Sha256Digest sha256(const void* data, size_t size);

// Incremental HMAC-SHA256 keyed with an arbitrary-length key (keys over 64 bytes are hashed).
class HmacSha256 {
 public:
  HmacSha256(const void* key, size_t key_size);
  explicit HmacSha256(const std::string& key) : HmacSha256(key.data(), key.size()) {}
  void update(const void* data, size_t size) { inner_.update(data, size); }
  void update(const std::string& data) { inner_.update(data); }
  Sha256Digest finish();

 private:
  Sha256 inner_;
  std::array<uint8_t, kSha256BlockBytes> outer_pad_;
};

Sha256Digest hmacSha256(const std::string& key, const void* data, size_t size);

// Compares two equal-length buffers in time that depends only on `size`, not on the contents.
bool constantTimeEqual(const void* a, const void* b, size_t size);

// Fills `out` with `size` unpredictable bytes from getrandom(2) (blocks only until the kernel's
// pool is initialised at boot). Used for handshake nonces and anything else that must not repeat.
Status generateNonce(void* out, size_t size);

// Lower-case hex of a buffer, for test output and logs.
std::string toHex(const void* data, size_t size);

}  // namespace lightcc
