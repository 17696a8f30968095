// The rendezvous' digests and constant-time compare over HARP's HMAC-SHA256, and getrandom nonces.
#include "transport/rendezvous/store_crypto.h"

#include <sys/random.h>

#include <cerrno>

namespace lightcc {

Sha256Digest sha256(const void* data, size_t size) {
  harp::Sha256 hash;
  hash.update(data, size);
  Sha256Digest digest;
  hash.finish(digest.data());
  return digest;
}

Sha256Digest hmacSha256(const std::string& key, const void* data, size_t size) {
  harp::HmacSha256 mac(key.data(), key.size());
  mac.update(data, size);
  Sha256Digest digest;
  mac.finish(digest.data());
  return digest;
}

bool constantTimeEqual(const void* a, const void* b, size_t size) {
  return harp::harpMacEqual(static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), size);
}

Status generateNonce(void* out, size_t size) {
  auto* p = static_cast<uint8_t*>(out);
  size_t filled = 0;
  while (filled < size) {
    ssize_t got = getrandom(p + filled, size - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return Status::SystemError(errnoMessage("getrandom(" + std::to_string(size - filled) +
                                                  " bytes) for a nonce",
                                              errno));
    }
    filled += static_cast<size_t>(got);
  }
  return Status::OK();
}

std::string toHex(const void* data, size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* p = static_cast<const uint8_t*>(data);
  std::string hex;
  hex.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    hex.push_back(kDigits[p[i] >> 4]);
    hex.push_back(kDigits[p[i] & 0xf]);
  }
  return hex;
}

}  // namespace lightcc
