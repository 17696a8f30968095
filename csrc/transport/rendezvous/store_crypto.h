// The rendezvous' crypto: HMAC-SHA256 digests, constant-time comparison, OS-random nonces.
//
// HARP owns SHA-256 and HMAC (harp/hmac.h: FIPS 180-4, RFC 2104; the CMake target harp_hmac), the
// one implementation in the tree: the job secret is checked by the same code on both of lightcc's
// authenticated paths (this store and the plugin's handshake). lightcc has none of its own; this
// is the store's view of it. The FIPS and RFC 4231 vectors run in tests/cpp/store_test.cc. Not
// meant for bulk data. Thread-safe (no shared state).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "harp/hmac.h"

namespace lightcc {

using Sha256Digest = std::array<uint8_t, harp::kSha256Bytes>;

Sha256Digest sha256(const void* data, size_t size);

// HMAC-SHA256 of `data` keyed with `key` (any length; keys over 64 bytes are hashed).
Sha256Digest hmacSha256(const std::string& key, const void* data, size_t size);

// Compares two equal-length buffers in time that depends only on `size`, not on the contents.
bool constantTimeEqual(const void* a, const void* b, size_t size);

// Fills `out` with `size` unpredictable bytes from getrandom(2) (blocks only until the kernel's
// pool is initialised at boot). Used for handshake nonces and anything else that must not repeat.
Status generateNonce(void* out, size_t size);

// Lower-case hex of a buffer, for test output and logs.
std::string toHex(const void* data, size_t size);

}  // namespace lightcc
