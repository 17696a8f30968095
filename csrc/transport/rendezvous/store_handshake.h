// ServerHandshake: the rendezvous server's side of a session's handshake (HELLO, then AUTH).
//
// Owned by its StoreSession (store_session.h) and used by the server thread only. It checks each
// handshake frame and says what the session does next — reply, refuse, or drop the peer — while
// the session keeps the stages and the socket. Refusals are logged here, naming the peer.
#pragma once

#include <cstdint>
#include <string>

#include "transport/rendezvous/store_auth.h"
#include "transport/rendezvous/store_wire.h"

namespace lightcc {
namespace rendezvous {

// What the session does after a handshake frame.
struct HandshakeStep {
  enum class Kind { kReply, kRefuse, kDrop };
  Kind kind = Kind::kReply;
  std::string frame;                               // kReply: the CHALLENGE or WELCOME to send
  RefuseReason reason = RefuseReason::kBadSecret;  // kRefuse
  std::string text;                                // kRefuse: the detail sent; kDrop: why
};

class ServerHandshake {
 public:
  explicit ServerHandshake(std::string peer) : peer_(std::move(peer)) {}
  // HELLO: the magic, a version this server speaks, then a CHALLENGE with a fresh nonce.
  HandshakeStep hello(FrameReader& reader);
  // AUTH: the client's proof of `secret` for a client at init `generation`, then a WELCOME.
  HandshakeStep auth(const std::string& secret, uint64_t generation, FrameReader& reader);
  // "ip:port", and " (rank r)" once the HELLO said it: how logs name the peer.
  std::string who() const;

 private:
  const std::string peer_;
  HandshakeTranscript transcript_;
  bool rank_known_ = false;
};

}  // namespace rendezvous
}  // namespace lightcc
