// SHA-256 (FIPS 180-4), HMAC-SHA256 (RFC 2104), constant-time compare and getrandom nonces.
#include "common/hmac_sha256.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace lightcc {
namespace {

constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

constexpr std::array<uint32_t, 8> kInitialState = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

inline uint32_t loadBigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

constexpr uint8_t kInnerPadByte = 0x36;
constexpr uint8_t kOuterPadByte = 0x5c;

}  // namespace

Sha256::Sha256() { reset(); }

void Sha256::reset() {
  state_ = kInitialState;
  buffer_.fill(0);
  buffered_ = 0;
  total_bytes_ = 0;
}

void Sha256::compressBlock(const uint8_t* block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i) w[i] = loadBigEndian32(block + 4 * i);
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t choose = (e & f) ^ (~e & g);
    uint32_t t1 = h + s1 + choose + kRoundConstants[i] + w[i];
    uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = s0 + majority;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

void Sha256::update(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  total_bytes_ += size;
  if (buffered_ > 0) {
    size_t take = std::min(size, kSha256BlockBytes - buffered_);
    std::memcpy(buffer_.data() + buffered_, p, take);
    buffered_ += take;
    p += take;
    size -= take;
    if (buffered_ < kSha256BlockBytes) return;
    compressBlock(buffer_.data());
    buffered_ = 0;
  }
  while (size >= kSha256BlockBytes) {
    compressBlock(p);
    p += kSha256BlockBytes;
    size -= kSha256BlockBytes;
  }
  if (size > 0) {
    std::memcpy(buffer_.data(), p, size);
    buffered_ = size;
  }
}

Sha256Digest Sha256::finish() {
  const uint64_t bit_length = total_bytes_ * 8;
  // Padding: 0x80, zeros up to 56 mod 64, then the 64-bit big-endian message length in bits.
  const uint8_t marker = 0x80;
  update(&marker, 1);
  const uint8_t zeros[kSha256BlockBytes] = {};
  size_t pad = (buffered_ <= 56) ? 56 - buffered_ : kSha256BlockBytes + 56 - buffered_;
  update(zeros, pad);
  uint8_t length_bytes[8];
  for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<uint8_t>(bit_length >> (56 - 8 * i));
  update(length_bytes, 8);

  Sha256Digest digest;
  for (int i = 0; i < 8; ++i) {
    digest[4 * i] = static_cast<uint8_t>(state_[i] >> 24);
    digest[4 * i + 1] = static_cast<uint8_t>(state_[i] >> 16);
    digest[4 * i + 2] = static_cast<uint8_t>(state_[i] >> 8);
    digest[4 * i + 3] = static_cast<uint8_t>(state_[i]);
  }
  return digest;
}

Sha256Digest sha256(const void* data, size_t size) {
  Sha256 hash;
  hash.update(data, size);
  return hash.finish();
}

HmacSha256::HmacSha256(const void* key, size_t key_size) {
  std::array<uint8_t, kSha256BlockBytes> block_key{};
  if (key_size > kSha256BlockBytes) {
    Sha256Digest hashed = sha256(key, key_size);
    std::memcpy(block_key.data(), hashed.data(), hashed.size());
  } else if (key_size > 0) {
    std::memcpy(block_key.data(), key, key_size);
  }
  std::array<uint8_t, kSha256BlockBytes> inner_pad;
  for (size_t i = 0; i < kSha256BlockBytes; ++i) {
    inner_pad[i] = block_key[i] ^ kInnerPadByte;
    outer_pad_[i] = block_key[i] ^ kOuterPadByte;
  }
  inner_.update(inner_pad.data(), inner_pad.size());
}

Sha256Digest HmacSha256::finish() {
  Sha256Digest inner_digest = inner_.finish();
  Sha256 outer;
  outer.update(outer_pad_.data(), outer_pad_.size());
  outer.update(inner_digest.data(), inner_digest.size());
  return outer.finish();
}

Sha256Digest hmacSha256(const std::string& key, const void* data, size_t size) {
  HmacSha256 mac(key);
  mac.update(data, size);
  return mac.finish();
}

bool constantTimeEqual(const void* a, const void* b, size_t size) {
  // volatile keeps the compiler from turning the loop into an early-exit memcmp.
  const volatile uint8_t* x = static_cast<const volatile uint8_t*>(a);
  const volatile uint8_t* y = static_cast<const volatile uint8_t*>(b);
  uint8_t difference = 0;
  for (size_t i = 0; i < size; ++i) difference |= static_cast<uint8_t>(x[i] ^ y[i]);
  return difference == 0;
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
