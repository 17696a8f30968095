// store_session: one client connection of the rendezvous server (handshake, then requests).
//
// Owned and driven by the server thread only. Never blocks: reads and writes are non-blocking,
// output waits in a buffer for POLLOUT, a GET/WAIT whose keys are missing is parked until the
// table wakes it or its deadline passes.
//
// Stages, moved only by moveTo():
//   kAwaitHello -> kAwaitAuth   well-formed HELLO in a version this server speaks; CHALLENGE sent
//   kAwaitAuth  -> kReady       proof_c verifies and the generation matches; WELCOME sent
//   kReady      -> kParked      GET/WAIT with a key still missing
//   kParked     -> kReady       the keys exist (VALUE/OK sent) or the deadline passed (TIMED_OUT)
//   kAwaitHello/kAwaitAuth -> kClosing   REFUSE sent; the rest of the output is flushed, the write
//                                        side shut, and input drained until EOF or a deadline
//   any         -> kClosed      peer closed, protocol violation, I/O error, deadline; fd released
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transport/rendezvous/socket_util.h"
#include "transport/rendezvous/store_auth.h"
#include "transport/rendezvous/store_handshake.h"
#include "transport/rendezvous/store_table.h"
#include "transport/rendezvous/store_wire.h"

namespace lightcc {
namespace rendezvous {

// What every session of one server shares.
struct SessionContext {
  std::string secret;
  uint64_t generation = 0;
  StoreTable table;
  // Filled by table mutations; the server resumes these sessions after each event.
  std::vector<uint64_t> woken;
};

// Frames waiting for the socket to take them, in order; the session polls for POLLOUT meanwhile.
class Outbox {
 public:
  void append(std::string frame);
  bool empty() const { return out_.empty(); }
  size_t size() const { return out_.size(); }
  // So much waits for a slow reader that the session stops taking requests.
  bool backpressured() const;
  // Sends what the socket takes now. 0: all sent, or the socket is full (EAGAIN); else the errno
  // that stopped it, the unsent bytes kept.
  int sendTo(int fd);
  // Shuts the socket's write side once everything is sent (a refused peer); once only.
  void shutWhenEmpty(int fd);
  void clear() { out_.clear(); }

 private:
  std::string out_;
  bool write_shut_ = false;
};

class StoreSession {
 public:
  enum class Stage { kAwaitHello, kAwaitAuth, kReady, kParked, kClosing, kClosed };

  // `peer` is "ip:port" for logs; the handshake must finish by `handshake_deadline`.
  StoreSession(uint64_t id, UniqueFd fd, std::string peer, Clock::time_point handshake_deadline);
  ~StoreSession();

  uint64_t id() const { return id_; }
  int fd() const { return fd_.get(); }
  Stage stage() const { return stage_; }
  bool closed() const { return stage_ == Stage::kClosed; }
  // Events to poll for (0 once closed).
  short pollEvents() const;
  // The next time onTimer() must run; Clock::time_point::max() if none.
  Clock::time_point nextDeadline() const;

  void onReadable(SessionContext& ctx);
  void onWritable(SessionContext& ctx);
  // A key this session waited for was created.
  void onKeysChanged(SessionContext& ctx);
  void onTimer(SessionContext& ctx, Clock::time_point now);

 private:
  void moveTo(Stage next);
  void processInput(SessionContext& ctx);
  void handleFrame(SessionContext& ctx, const uint8_t* body, size_t size);
  // Acts on the handshake's verdict on a HELLO or AUTH; `next` is the stage a reply moves to.
  void advanceHandshake(SessionContext& ctx, const HandshakeStep& step, Stage next);
  void handleRequest(SessionContext& ctx, FrameReader& reader);
  void park(SessionContext& ctx, std::vector<std::string> keys, size_t missing, bool want_value,
            uint32_t timeout_ms);
  void queue(SessionContext& ctx, std::string frame);
  void flush(SessionContext& ctx);
  // Logs "dropped <peer> (rank r): <why>" and closes.
  void drop(SessionContext& ctx, const std::string& why);
  void close(SessionContext& ctx);

  const uint64_t id_;
  UniqueFd fd_;
  ServerHandshake handshake_;  // the peer's name, and what its HELLO said
  Stage stage_ = Stage::kAwaitHello;
  Clock::time_point deadline_;  // handshake, parked request or closing linger

  std::string input_;
  Outbox output_;

  // The parked GET/WAIT: its keys, the index of the first missing one (watched in the table).
  std::vector<std::string> parked_keys_;
  size_t parked_missing_ = 0;
  bool parked_wants_value_ = false;
};

}  // namespace rendezvous
}  // namespace lightcc
