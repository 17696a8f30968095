// Wire formats: flow handshake frames and the data chunk header; pure encode/decode/verify.
//
// Handshake on every TCP flow (server = the listening side, client = the connecting side):
//   server -> client  ServerHello {magic, version, flags, server_nonce, listen_id}      32 B
//   client -> server  ClientHello {magic, version, flags, comm_id, flow_idx, nflows,
//                                  chunk_bytes, client_nonce, mac_c}                   80 B
//   server -> client  Verdict     {magic, version, status, reason, mac_s}              48 B
// mac_c = HMAC(secret, "HARP1-C" || ServerHello || ClientHello[0:48])
// mac_s = HMAC(secret, "HARP1-S" || ClientHello || Verdict[0:16])
// Every frame starts with an 8-byte prefix {u32 magic, u16 version, u8 kind, u8 x} so a peer
// speaking another version is refused after 8 bytes. Then data flows carry chunks, each a
// 32-byte ChunkHeader {u32 magic, u32 len, u64 seq, u64 offset, u64 total} + len payload bytes.
// All integers little-endian. Decoders accept any bytes and never read past `n`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace harp {

constexpr uint32_t kFrameMagic = 0x50524148;  // "HARP"
constexpr uint32_t kChunkMagic = 0x4b4e4348;  // "HCNK"
constexpr uint16_t kWireVersion = 1;
constexpr size_t kPrefixBytes = 8;
constexpr size_t kServerHelloBytes = 32;
constexpr size_t kClientHelloBytes = 80;
constexpr size_t kVerdictBytes = 48;
constexpr size_t kChunkHeaderBytes = 32;
constexpr size_t kNonceBytes = 16;
constexpr size_t kMacBytes = 32;
constexpr uint8_t kFlagAuth = 0x1;  // the sender holds a job secret and MACs its frames

enum class FrameKind : uint8_t { kServerHello = 1, kClientHello = 2, kVerdict = 3 };

// Why a flow was refused; carried in the Verdict and logged on both sides.
enum class Refusal : uint32_t {
  kNone = 0,
  kBadMagic = 1,      // not a HARP peer
  kBadVersion = 2,    // another wire version
  kBadFrame = 3,      // wrong kind or a field out of range
  kBadMac = 4,        // does not know the job secret
  kAuthMismatch = 5,  // one side has a secret, the other has none
  kBadFlow = 6,       // flow index/count inconsistent with its siblings
  kTimeout = 7,       // handshake too slow
};
const char* harpRefusalName(Refusal r);

struct FramePrefix {
  uint32_t magic = 0;
  uint16_t version = 0;
  uint8_t kind = 0;
  uint8_t extra = 0;
};

struct ServerHello {
  uint8_t flags = 0;
  uint8_t nonce[kNonceBytes] = {};
  uint64_t listen_id = 0;
};

struct ClientHello {
  uint8_t flags = 0;
  uint64_t comm_id = 0;
  uint16_t flow_idx = 0;
  uint16_t nflows = 0;
  uint64_t chunk_bytes = 0;
  uint8_t nonce[kNonceBytes] = {};
  uint8_t mac[kMacBytes] = {};
};

struct Verdict {
  bool accepted = false;
  Refusal reason = Refusal::kNone;
  uint8_t mac[kMacBytes] = {};
};

struct ChunkHeader {
  uint32_t len = 0;
  uint64_t seq = 0;
  uint64_t offset = 0;
  uint64_t total = 0;
};

// Checks magic, version and kind of the first 8 bytes. Returns kNone or the refusal.
Refusal harpCheckPrefix(const uint8_t* p, size_t n, FrameKind want);

void harpEncodeServerHello(const ServerHello& h, uint8_t out[kServerHelloBytes]);
Refusal harpDecodeServerHello(const uint8_t* p, size_t n, ServerHello* out);

// Encodes the ClientHello and fills its MAC from the ServerHello bytes (zero MAC without a secret).
void harpEncodeClientHello(const ClientHello& h, const uint8_t server_hello[kServerHelloBytes],
                           const std::string& secret, uint8_t out[kClientHelloBytes]);
Refusal harpDecodeClientHello(const uint8_t* p, size_t n, ClientHello* out);
bool harpVerifyClientMac(const uint8_t server_hello[kServerHelloBytes],
                         const uint8_t client_hello[kClientHelloBytes], const std::string& secret);

void harpEncodeVerdict(const Verdict& v, const uint8_t client_hello[kClientHelloBytes],
                       const std::string& secret, uint8_t out[kVerdictBytes]);
Refusal harpDecodeVerdict(const uint8_t* p, size_t n, Verdict* out);
bool harpVerifyVerdictMac(const uint8_t client_hello[kClientHelloBytes],
                          const uint8_t verdict[kVerdictBytes], const std::string& secret);

void harpEncodeChunkHeader(const ChunkHeader& h, uint8_t out[kChunkHeaderBytes]);
// Rejects a bad magic, len > max_chunk, or offset + len > total. Returns "" or the reason.
std::string harpDecodeChunkHeader(const uint8_t* p, size_t n, uint64_t max_chunk, ChunkHeader* out);

}  // namespace harp
