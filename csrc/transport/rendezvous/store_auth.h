// store_auth: the handshake's proofs of the job secret (see the wire format in store_wire.h).
#pragma once

#include <cstdint>
#include <string>

#include "transport/rendezvous/store_wire.h"

namespace lightcc {
namespace rendezvous {

// The fields both proofs cover. Every one of them comes from HELLO or CHALLENGE, so a proof made
// for one connection, generation or rank is worthless for any other.
struct HandshakeTranscript {
  uint16_t version = kProtocolVersion;
  uint64_t generation = 0;
  int32_t rank = -1;
  Nonce client_nonce{};
  Nonce server_nonce{};
};

// proof_c: the client shows it knows `secret`.
Proof clientProof(const std::string& secret, const HandshakeTranscript& transcript);
// proof_s: the server shows it knows `secret`. A different label from proof_c, so neither side can
// reflect the other's proof back.
Proof serverProof(const std::string& secret, const HandshakeTranscript& transcript);
// Constant-time check of a received proof.
bool proofMatches(const Proof& expected, const Proof& received);

}  // namespace rendezvous
}  // namespace lightcc
