// store_wire: the rendezvous store's wire format (frames, opcodes, handshake) and its codec.
//
// WIRE FORMAT, version 1. Integers are big-endian. A connection carries frames in both directions:
//
//     u32 body_length | body          with 1 <= body_length <= the limit in force
//     body = u8 opcode | fields       string = u32 length | bytes;  nonce/proof = 32 raw bytes
//
// Limits: until the handshake succeeds a body may be at most kMaxHandshakeFrameBytes; afterwards
// kMaxFrameBytes, with keys of 1..kMaxKeyBytes and values of at most kMaxValueBytes. A frame over
// its limit, an unknown or out-of-stage opcode, a field running past the body, or bytes left after
// the last field makes the server drop that one connection (logging why) and keep serving others.
//
// Handshake: a mutual HMAC-SHA256 challenge over the job secret K, client first. Nothing but these
// frames is honoured before WELCOME.
//   C->S HELLO     0x01  magic "LCST" | u16 version | u64 generation | i32 rank | nonce_c
//   S->C CHALLENGE 0x02  nonce_s
//   C->S AUTH      0x03  proof_c = HMAC(K, "lightcc-store client" | u16 version | u64 generation
//                                          | i32 rank | nonce_c | nonce_s)
//   S->C WELCOME   0x04  proof_s = HMAC(K, "lightcc-store server" | same fields)
//     or REFUSE    0x05  u8 reason | string detail, after which the server closes.
// The server checks proof_c first (bad -> kBadSecret), then the generation the proof covers against
// its own (different -> kStaleGeneration); a version it does not speak is refused right after HELLO
// (kBadVersion). The client refuses a server whose proof_s does not verify. Both nonces are fresh
// from getrandom, so neither proof can be replayed into another connection. This authenticates the
// connection's start only; bytes are not encrypted (the store carries addresses, not data).
//
// Requests, one in flight per connection (a client sending while one is pending is dropped):
//   SET  0x10  key | value                          -> OK
//   GET  0x11  key | u32 timeout_ms                 -> VALUE value | TIMED_OUT 0
//   ADD  0x12  key | i64 delta                      -> COUNTER i64 | ERROR detail
//   WAIT 0x13  u32 n | n x key | u32 timeout_ms     -> OK | TIMED_OUT index of a missing key
// Responses: OK 0x20, VALUE 0x21 string, COUNTER 0x22 i64, TIMED_OUT 0x23 u32, ERROR 0x24 string.
// GET and WAIT are parked on the server until their keys exist or timeout_ms passes. Counters are
// stored as decimal text, so GET of a counter key returns e.g. "3".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace lightcc {
namespace rendezvous {

constexpr char kProtocolMagic[4] = {'L', 'C', 'S', 'T'};
constexpr uint16_t kProtocolVersion = 1;
constexpr size_t kNonceBytes = 32;
constexpr size_t kProofBytes = 32;
constexpr size_t kFrameHeaderBytes = 4;
constexpr size_t kMaxHandshakeFrameBytes = 256;
constexpr size_t kMaxKeyBytes = 4096;
constexpr size_t kMaxValueBytes = 16u << 20;
constexpr size_t kMaxFrameBytes = kMaxValueBytes + kMaxKeyBytes + 64;
constexpr uint32_t kMaxWaitKeys = 1u << 16;

using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

enum class Opcode : uint8_t {
  kHello = 0x01,
  kChallenge = 0x02,
  kAuth = 0x03,
  kWelcome = 0x04,
  kRefuse = 0x05,
  kSet = 0x10,
  kGet = 0x11,
  kAdd = 0x12,
  kWait = 0x13,
  kOk = 0x20,
  kValue = 0x21,
  kCounter = 0x22,
  kTimedOut = 0x23,
  kError = 0x24,
};

// Why a server refused a connection (the u8 in REFUSE).
enum class RefuseReason : uint8_t {
  kBadSecret = 1,
  kStaleGeneration = 2,
  kBadVersion = 3,
};

// "SET", "GET", ... or "opcode 0x7f" for logs and error messages.
std::string opcodeName(uint8_t opcode);
std::string refuseReasonName(uint8_t reason);

// Builds one frame: the constructor writes the opcode, finish() prepends the length header.
class FrameWriter {
 public:
  explicit FrameWriter(Opcode opcode);
  FrameWriter& u8(uint8_t v);
  FrameWriter& u16(uint16_t v);
  FrameWriter& u32(uint32_t v);
  FrameWriter& u64(uint64_t v);
  FrameWriter& i32(int32_t v) { return u32(static_cast<uint32_t>(v)); }
  FrameWriter& i64(int64_t v) { return u64(static_cast<uint64_t>(v)); }
  FrameWriter& raw(const void* data, size_t size);
  FrameWriter& str(const std::string& s);
  // Header + body, ready to send. The writer is spent afterwards.
  std::string finish();

 private:
  std::string bytes_;
};

// Reads the fields of one frame body. Every read checks bounds; the first failure is sticky and
// described by error() ("field 'key' needs 12 bytes, 3 left in a 20-byte GET frame").
class FrameReader {
 public:
  FrameReader(const uint8_t* body, size_t size);
  uint8_t opcode() const { return opcode_; }
  bool u8(const char* field, uint8_t* v);
  bool u16(const char* field, uint16_t* v);
  bool u32(const char* field, uint32_t* v);
  bool u64(const char* field, uint64_t* v);
  bool i32(const char* field, int32_t* v);
  bool i64(const char* field, int64_t* v);
  bool raw(const char* field, void* out, size_t size);
  // A string of at most max_size bytes (and at least min_size).
  bool str(const char* field, size_t min_size, size_t max_size, std::string* out);
  // True when every byte was consumed; otherwise records a "trailing bytes" error.
  bool finish();
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  bool take(const char* field, size_t size, const uint8_t** at);

  const uint8_t* body_;
  size_t size_;
  size_t offset_ = 1;
  uint8_t opcode_ = 0;
  std::string error_;
};

// Decodes a frame header; a length of 0 or over `limit` is an error naming both.
Status parseFrameLength(const uint8_t* header, size_t limit, uint32_t* body_length);

}  // namespace rendezvous
}  // namespace lightcc
