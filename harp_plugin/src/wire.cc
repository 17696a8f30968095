// Wire formats: encoding, bounds-checked decoding and HMAC of handshake frames and chunk headers.
#include "wire.h"

#include <cstring>

#include "harp/hmac.h"

namespace harp {
namespace {

void put16(uint8_t* p, uint16_t v) { for (int i = 0; i < 2; ++i) p[i] = uint8_t(v >> (8 * i)); }
void put32(uint8_t* p, uint32_t v) { for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i)); }
void put64(uint8_t* p, uint64_t v) { for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i)); }
uint16_t get16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void putPrefix(uint8_t* p, FrameKind kind, uint8_t extra) {
  put32(p, kFrameMagic);
  put16(p + 4, kWireVersion);
  p[6] = static_cast<uint8_t>(kind);
  p[7] = extra;
}

void mac(const std::string& secret, const char* label, const uint8_t* a, size_t na,
         const uint8_t* b, size_t nb, uint8_t out[kMacBytes]) {
  if (secret.empty()) {
    memset(out, 0, kMacBytes);
    return;
  }
  HmacSha256 h(secret.data(), secret.size());
  h.update(label, strlen(label));
  h.update(a, na);
  h.update(b, nb);
  h.finish(out);
}

}  // namespace

const char* harpRefusalName(Refusal r) {
  switch (r) {
    case Refusal::kNone: return "none";
    case Refusal::kBadMagic: return "bad magic (not a HARP peer)";
    case Refusal::kBadVersion: return "unsupported wire version";
    case Refusal::kBadFrame: return "malformed frame";
    case Refusal::kBadMac: return "HMAC mismatch (peer does not know the job secret)";
    case Refusal::kAuthMismatch: return "one side has a job secret and the other has none";
    case Refusal::kBadFlow: return "inconsistent flow index/count";
    case Refusal::kTimeout: return "handshake timed out";
  }
  return "unknown refusal";
}

Refusal harpCheckPrefix(const uint8_t* p, size_t n, FrameKind want) {
  if (n < kPrefixBytes) return Refusal::kBadFrame;
  if (get32(p) != kFrameMagic) return Refusal::kBadMagic;
  if (get16(p + 4) != kWireVersion) return Refusal::kBadVersion;
  if (p[6] != static_cast<uint8_t>(want)) return Refusal::kBadFrame;
  return Refusal::kNone;
}

void harpEncodeServerHello(const ServerHello& h, uint8_t out[kServerHelloBytes]) {
  memset(out, 0, kServerHelloBytes);
  putPrefix(out, FrameKind::kServerHello, h.flags);
  memcpy(out + 8, h.nonce, kNonceBytes);
  put64(out + 24, h.listen_id);
}

Refusal harpDecodeServerHello(const uint8_t* p, size_t n, ServerHello* out) {
  Refusal r = harpCheckPrefix(p, n, FrameKind::kServerHello);
  if (r != Refusal::kNone) return r;
  if (n < kServerHelloBytes) return Refusal::kBadFrame;
  out->flags = p[7];
  if ((out->flags & ~kFlagAuth) != 0) return Refusal::kBadFrame;
  memcpy(out->nonce, p + 8, kNonceBytes);
  out->listen_id = get64(p + 24);
  return Refusal::kNone;
}

void harpEncodeClientHello(const ClientHello& h, const uint8_t server_hello[kServerHelloBytes],
                           const std::string& secret, uint8_t out[kClientHelloBytes]) {
  memset(out, 0, kClientHelloBytes);
  putPrefix(out, FrameKind::kClientHello, h.flags);
  put64(out + 8, h.comm_id);
  put16(out + 16, h.flow_idx);
  put16(out + 18, h.nflows);
  put64(out + 24, h.chunk_bytes);
  memcpy(out + 32, h.nonce, kNonceBytes);
  mac(secret, "HARP1-C", server_hello, kServerHelloBytes, out, 48, out + 48);
}

Refusal harpDecodeClientHello(const uint8_t* p, size_t n, ClientHello* out) {
  Refusal r = harpCheckPrefix(p, n, FrameKind::kClientHello);
  if (r != Refusal::kNone) return r;
  if (n < kClientHelloBytes) return Refusal::kBadFrame;
  out->flags = p[7];
  out->comm_id = get64(p + 8);
  out->flow_idx = get16(p + 16);
  out->nflows = get16(p + 18);
  out->chunk_bytes = get64(p + 24);
  memcpy(out->nonce, p + 32, kNonceBytes);
  memcpy(out->mac, p + 48, kMacBytes);
  if ((out->flags & ~kFlagAuth) != 0 || get32(p + 20) != 0) return Refusal::kBadFrame;
  if (out->nflows == 0 || out->nflows > 64 || out->flow_idx >= out->nflows) return Refusal::kBadFlow;
  if (out->chunk_bytes < 4096 || out->chunk_bytes > (64u << 20)) return Refusal::kBadFrame;
  return Refusal::kNone;
}

bool harpVerifyClientMac(const uint8_t server_hello[kServerHelloBytes],
                         const uint8_t client_hello[kClientHelloBytes], const std::string& secret) {
  uint8_t want[kMacBytes];
  mac(secret, "HARP1-C", server_hello, kServerHelloBytes, client_hello, 48, want);
  return harpMacEqual(want, client_hello + 48, kMacBytes);
}

void harpEncodeVerdict(const Verdict& v, const uint8_t client_hello[kClientHelloBytes],
                       const std::string& secret, uint8_t out[kVerdictBytes]) {
  memset(out, 0, kVerdictBytes);
  putPrefix(out, FrameKind::kVerdict, v.accepted ? 1 : 0);
  put32(out + 8, static_cast<uint32_t>(v.reason));
  mac(secret, "HARP1-S", client_hello, kClientHelloBytes, out, 16, out + 16);
}

Refusal harpDecodeVerdict(const uint8_t* p, size_t n, Verdict* out) {
  Refusal r = harpCheckPrefix(p, n, FrameKind::kVerdict);
  if (r != Refusal::kNone) return r;
  if (n < kVerdictBytes || p[7] > 1) return Refusal::kBadFrame;
  out->accepted = p[7] == 1;
  uint32_t reason = get32(p + 8);
  if (reason > static_cast<uint32_t>(Refusal::kTimeout)) return Refusal::kBadFrame;
  out->reason = static_cast<Refusal>(reason);
  memcpy(out->mac, p + 16, kMacBytes);
  return Refusal::kNone;
}

bool harpVerifyVerdictMac(const uint8_t client_hello[kClientHelloBytes],
                          const uint8_t verdict[kVerdictBytes], const std::string& secret) {
  uint8_t want[kMacBytes];
  mac(secret, "HARP1-S", client_hello, kClientHelloBytes, verdict, 16, want);
  return harpMacEqual(want, verdict + 16, kMacBytes);
}

void harpEncodeChunkHeader(const ChunkHeader& h, uint8_t out[kChunkHeaderBytes]) {
  put32(out, kChunkMagic);
  put32(out + 4, h.len);
  put64(out + 8, h.seq);
  put64(out + 16, h.offset);
  put64(out + 24, h.total);
}

std::string harpDecodeChunkHeader(const uint8_t* p, size_t n, uint64_t max_chunk, ChunkHeader* out) {
  if (n < kChunkHeaderBytes) return "short chunk header";
  if (get32(p) != kChunkMagic) return "bad chunk magic";
  out->len = get32(p + 4);
  out->seq = get64(p + 8);
  out->offset = get64(p + 16);
  out->total = get64(p + 24);
  if (out->len > max_chunk) {
    return "chunk of " + std::to_string(out->len) + " bytes exceeds the negotiated " +
           std::to_string(max_chunk);
  }
  if (out->offset > out->total || out->total - out->offset < out->len) {
    return "chunk [" + std::to_string(out->offset) + ", +" + std::to_string(out->len) +
           ") outside a message of " + std::to_string(out->total) + " bytes";
  }
  return "";
}

}  // namespace harp
