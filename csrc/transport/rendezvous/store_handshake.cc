// ServerHandshake: HELLO and AUTH checked against the protocol version, the job secret and the generation.
#include "transport/rendezvous/store_handshake.h"

#include <cstring>

#include "transport/rendezvous/store_crypto.h"
#include "transport/rendezvous/store_log.h"

namespace lightcc {
namespace rendezvous {
namespace {

HandshakeStep reply(std::string frame) {
  HandshakeStep step;
  step.frame = std::move(frame);
  return step;
}

HandshakeStep refuse(RefuseReason reason, std::string detail) {
  HandshakeStep step;
  step.kind = HandshakeStep::Kind::kRefuse;
  step.reason = reason;
  step.text = std::move(detail);
  return step;
}

HandshakeStep drop(std::string why) {
  HandshakeStep step;
  step.kind = HandshakeStep::Kind::kDrop;
  step.text = std::move(why);
  return step;
}

}  // namespace

std::string ServerHandshake::who() const {
  if (!rank_known_) return peer_;
  return peer_ + " (rank " + std::to_string(transcript_.rank) + ")";
}

HandshakeStep ServerHandshake::hello(FrameReader& reader) {
  char magic[sizeof(kProtocolMagic)];
  if (reader.raw("magic", magic, sizeof(magic)) &&
      std::memcmp(magic, kProtocolMagic, sizeof(magic)) != 0) {
    return drop("HELLO without the lightcc store magic (not a lightcc store client)");
  }
  reader.u16("version", &transcript_.version);
  reader.u64("generation", &transcript_.generation);
  reader.i32("rank", &transcript_.rank);
  reader.raw("nonce", transcript_.client_nonce.data(), transcript_.client_nonce.size());
  if (!reader.finish()) return drop("malformed HELLO: " + reader.error());
  rank_known_ = true;
  if (transcript_.version != kProtocolVersion) {
    const std::string detail = "the client speaks store protocol version " +
                               std::to_string(transcript_.version) + ", this server " +
                               std::to_string(kProtocolVersion);
    storeLog("refused " + who() + ": " + detail);
    return refuse(RefuseReason::kBadVersion, detail);
  }
  Status nonce_ok = generateNonce(transcript_.server_nonce.data(), transcript_.server_nonce.size());
  if (!nonce_ok.ok()) return drop(nonce_ok.message());
  return reply(
      FrameWriter(Opcode::kChallenge).raw(transcript_.server_nonce.data(), transcript_.server_nonce.size()).finish());
}

HandshakeStep ServerHandshake::auth(const std::string& secret, uint64_t generation, FrameReader& reader) {
  Proof received;
  reader.raw("proof", received.data(), received.size());
  if (!reader.finish()) return drop("malformed AUTH: " + reader.error());
  if (!proofMatches(clientProof(secret, transcript_), received)) {
    storeLog("refused " + peer_ + ": bad job secret (peer claims rank " +
             std::to_string(transcript_.rank) + ")");
    return refuse(RefuseReason::kBadSecret, "the client's proof of the job secret does not verify");
  }
  if (transcript_.generation != generation) {
    const std::string detail = "stale generation: the client is at init generation " +
                               std::to_string(transcript_.generation) + ", this store serves " +
                               std::to_string(generation);
    storeLog("refused " + who() + ": " + detail);
    return refuse(RefuseReason::kStaleGeneration, detail);
  }
  const Proof proof = serverProof(secret, transcript_);
  return reply(FrameWriter(Opcode::kWelcome).raw(proof.data(), proof.size()).finish());
}

}  // namespace rendezvous
}  // namespace lightcc
