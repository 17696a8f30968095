// HMAC-SHA256 proofs of the job secret exchanged in the rendezvous handshake.
#include "transport/rendezvous/store_auth.h"

#include <algorithm>

#include "transport/rendezvous/store_crypto.h"

namespace lightcc {
namespace rendezvous {
namespace {

constexpr char kClientLabel[] = "lightcc-store client";
constexpr char kServerLabel[] = "lightcc-store server";

Proof proofWithLabel(const std::string& secret, const char* label,
                     const HandshakeTranscript& transcript) {
  // Reuse the frame encoder for a fixed big-endian layout; the length header is part of the input,
  // which is harmless since both sides compute it identically.
  FrameWriter message(Opcode::kAuth);
  message.str(label)
      .u16(transcript.version)
      .u64(transcript.generation)
      .i32(transcript.rank)
      .raw(transcript.client_nonce.data(), transcript.client_nonce.size())
      .raw(transcript.server_nonce.data(), transcript.server_nonce.size());
  const std::string bytes = message.finish();
  Sha256Digest mac = hmacSha256(secret, bytes.data(), bytes.size());
  Proof proof;
  static_assert(sizeof(proof) == sizeof(mac), "a proof is one HMAC-SHA256 digest");
  std::copy(mac.begin(), mac.end(), proof.begin());
  return proof;
}

}  // namespace

Proof clientProof(const std::string& secret, const HandshakeTranscript& transcript) {
  return proofWithLabel(secret, kClientLabel, transcript);
}

Proof serverProof(const std::string& secret, const HandshakeTranscript& transcript) {
  return proofWithLabel(secret, kServerLabel, transcript);
}

bool proofMatches(const Proof& expected, const Proof& received) {
  return constantTimeEqual(expected.data(), received.data(), expected.size());
}

}  // namespace rendezvous
}  // namespace lightcc
