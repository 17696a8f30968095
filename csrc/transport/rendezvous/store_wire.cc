// Encoder and bounds-checked decoder for the rendezvous store's frames (format in store_wire.h).
#include "transport/rendezvous/store_wire.h"

#include <cstdio>
#include <cstring>
#include <utility>

namespace lightcc {
namespace rendezvous {

std::string opcodeName(uint8_t opcode) {
  switch (static_cast<Opcode>(opcode)) {
    case Opcode::kHello: return "HELLO";
    case Opcode::kChallenge: return "CHALLENGE";
    case Opcode::kAuth: return "AUTH";
    case Opcode::kWelcome: return "WELCOME";
    case Opcode::kRefuse: return "REFUSE";
    case Opcode::kSet: return "SET";
    case Opcode::kGet: return "GET";
    case Opcode::kAdd: return "ADD";
    case Opcode::kWait: return "WAIT";
    case Opcode::kOk: return "OK";
    case Opcode::kValue: return "VALUE";
    case Opcode::kCounter: return "COUNTER";
    case Opcode::kTimedOut: return "TIMED_OUT";
    case Opcode::kError: return "ERROR";
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "opcode 0x%02x", opcode);
  return buf;
}

std::string refuseReasonName(uint8_t reason) {
  switch (static_cast<RefuseReason>(reason)) {
    case RefuseReason::kBadSecret: return "bad job secret";
    case RefuseReason::kStaleGeneration: return "stale generation";
    case RefuseReason::kBadVersion: return "protocol version mismatch";
  }
  return "unknown reason " + std::to_string(reason);
}

FrameWriter::FrameWriter(Opcode opcode) {
  bytes_.assign(kFrameHeaderBytes, '\0');
  u8(static_cast<uint8_t>(opcode));
}

FrameWriter& FrameWriter::u8(uint8_t v) {
  bytes_.push_back(static_cast<char>(v));
  return *this;
}

FrameWriter& FrameWriter::u16(uint16_t v) {
  u8(static_cast<uint8_t>(v >> 8));
  return u8(static_cast<uint8_t>(v));
}

FrameWriter& FrameWriter::u32(uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) u8(static_cast<uint8_t>(v >> shift));
  return *this;
}

FrameWriter& FrameWriter::u64(uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) u8(static_cast<uint8_t>(v >> shift));
  return *this;
}

FrameWriter& FrameWriter::raw(const void* data, size_t size) {
  bytes_.append(static_cast<const char*>(data), size);
  return *this;
}

FrameWriter& FrameWriter::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  return raw(s.data(), s.size());
}

std::string FrameWriter::finish() {
  const uint32_t body = static_cast<uint32_t>(bytes_.size() - kFrameHeaderBytes);
  for (int i = 0; i < 4; ++i) bytes_[i] = static_cast<char>(body >> (24 - 8 * i));
  return std::move(bytes_);
}

FrameReader::FrameReader(const uint8_t* body, size_t size) : body_(body), size_(size) {
  if (size == 0) {
    error_ = "empty frame";
    offset_ = 0;
  } else {
    opcode_ = body[0];
  }
}

bool FrameReader::take(const char* field, size_t size, const uint8_t** at) {
  if (!ok()) return false;
  if (size > size_ - offset_) {
    error_ = "field '" + std::string(field) + "' needs " + std::to_string(size) + " bytes, " +
             std::to_string(size_ - offset_) + " left in a " + std::to_string(size_) + "-byte " +
             opcodeName(opcode_) + " frame";
    return false;
  }
  *at = body_ + offset_;
  offset_ += size;
  return true;
}

bool FrameReader::u8(const char* field, uint8_t* v) {
  const uint8_t* p;
  if (!take(field, 1, &p)) return false;
  *v = p[0];
  return true;
}

bool FrameReader::u16(const char* field, uint16_t* v) {
  const uint8_t* p;
  if (!take(field, 2, &p)) return false;
  *v = static_cast<uint16_t>((p[0] << 8) | p[1]);
  return true;
}

bool FrameReader::u32(const char* field, uint32_t* v) {
  const uint8_t* p;
  if (!take(field, 4, &p)) return false;
  *v = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
  return true;
}

bool FrameReader::u64(const char* field, uint64_t* v) {
  const uint8_t* p;
  if (!take(field, 8, &p)) return false;
  uint64_t x = 0;
  for (int i = 0; i < 8; ++i) x = (x << 8) | p[i];
  *v = x;
  return true;
}

bool FrameReader::i32(const char* field, int32_t* v) {
  uint32_t x;
  if (!u32(field, &x)) return false;
  *v = static_cast<int32_t>(x);
  return true;
}

bool FrameReader::i64(const char* field, int64_t* v) {
  uint64_t x;
  if (!u64(field, &x)) return false;
  *v = static_cast<int64_t>(x);
  return true;
}

bool FrameReader::raw(const char* field, void* out, size_t size) {
  const uint8_t* p;
  if (!take(field, size, &p)) return false;
  std::memcpy(out, p, size);
  return true;
}

bool FrameReader::str(const char* field, size_t min_size, size_t max_size, std::string* out) {
  uint32_t length;
  if (!u32(field, &length)) return false;
  if (length < min_size || length > max_size) {
    error_ = "field '" + std::string(field) + "' is " + std::to_string(length) +
             " bytes, allowed " + std::to_string(min_size) + ".." + std::to_string(max_size);
    return false;
  }
  const uint8_t* p;
  if (!take(field, length, &p)) return false;
  out->assign(reinterpret_cast<const char*>(p), length);
  return true;
}

bool FrameReader::finish() {
  if (!ok()) return false;
  if (offset_ != size_) {
    error_ = std::to_string(size_ - offset_) + " trailing bytes after the last field of a " +
             opcodeName(opcode_) + " frame";
    return false;
  }
  return true;
}

Status parseFrameLength(const uint8_t* header, size_t limit, uint32_t* body_length) {
  const uint32_t length = (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) |
                          (uint32_t{header[2]} << 8) | uint32_t{header[3]};
  if (length == 0) return Status::PeerFailure("frame with an empty body");
  if (length > limit) {
    return Status::PeerFailure("frame of " + std::to_string(length) + " bytes exceeds the limit of " +
                               std::to_string(limit) + " bytes");
  }
  *body_length = length;
  return Status::OK();
}

}  // namespace rendezvous
}  // namespace lightcc
