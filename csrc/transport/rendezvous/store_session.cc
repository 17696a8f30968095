// One rendezvous server connection: non-blocking I/O, handshake checks and request handling.
#include "transport/rendezvous/store_session.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "transport/rendezvous/store_crypto.h"
#include "transport/rendezvous/store_log.h"

namespace lightcc {
namespace rendezvous {
namespace {

constexpr size_t kReadChunkBytes = 64 * 1024;
constexpr int kMaxReadsPerEvent = 16;
// Stop taking requests while this much output waits for a slow reader.
constexpr size_t kOutputHighWaterBytes = 1u << 20;
// How long a refused peer gets to read the REFUSE before the socket is closed regardless.
constexpr auto kClosingLinger = std::chrono::seconds(2);

std::string frameTimedOut(uint32_t missing_index) {
  return FrameWriter(Opcode::kTimedOut).u32(missing_index).finish();
}

}  // namespace

StoreSession::StoreSession(uint64_t id, UniqueFd fd, std::string peer,
                           Clock::time_point handshake_deadline)
    : id_(id), fd_(std::move(fd)), handshake_(std::move(peer)), deadline_(handshake_deadline) {}

StoreSession::~StoreSession() = default;

void StoreSession::moveTo(Stage next) { stage_ = next; }

void Outbox::append(std::string frame) {
  if (out_.empty()) {
    out_ = std::move(frame);
  } else {
    out_ += frame;
  }
}

bool Outbox::backpressured() const { return out_.size() > kOutputHighWaterBytes; }

int Outbox::sendTo(int fd) {
  while (!out_.empty()) {
    ssize_t n = ::send(fd, out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      out_.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return errno != 0 ? errno : EIO;  // (send returning 0 for a non-empty buffer: never seen)
  }
  return 0;
}

void Outbox::shutWhenEmpty(int fd) {
  if (!out_.empty() || write_shut_) return;
  ::shutdown(fd, SHUT_WR);
  write_shut_ = true;
}

short StoreSession::pollEvents() const {
  if (closed()) return 0;
  short events = 0;
  if (!output_.empty()) events |= POLLOUT;
  if (!output_.backpressured()) events |= POLLIN;
  return events;
}

Clock::time_point StoreSession::nextDeadline() const {
  switch (stage_) {
    case Stage::kAwaitHello:
    case Stage::kAwaitAuth:
    case Stage::kParked:
    case Stage::kClosing:
      return deadline_;
    case Stage::kReady:
    case Stage::kClosed:
      break;
  }
  return Clock::time_point::max();
}

void StoreSession::onReadable(SessionContext& ctx) {
  char chunk[kReadChunkBytes];
  for (int round = 0; round < kMaxReadsPerEvent && !closed() && !output_.backpressured(); ++round) {
    ssize_t n = ::recv(fd_.get(), chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n > 0) {
      if (stage_ == Stage::kClosing) continue;  // draining a refused peer
      input_.append(chunk, static_cast<size_t>(n));
      processInput(ctx);
      continue;
    }
    if (n == 0) {
      close(ctx);  // orderly close by the peer
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    if (stage_ == Stage::kClosing || errno == ECONNRESET) {
      close(ctx);
    } else {
      drop(ctx, errnoMessage("recv", errno));
    }
    return;
  }
}

void StoreSession::onWritable(SessionContext& ctx) {
  flush(ctx);
  if (stage_ == Stage::kReady && !output_.backpressured()) processInput(ctx);
}

void StoreSession::processInput(SessionContext& ctx) {
  size_t consumed = 0;
  while (!closed() && stage_ != Stage::kClosing && !output_.backpressured()) {
    const size_t available = input_.size() - consumed;
    if (available == 0) break;
    if (stage_ == Stage::kParked) {
      drop(ctx, "sent a frame while its " + std::string(parked_wants_value_ ? "GET" : "WAIT") +
                    " was still pending (one request at a time)");
      return;
    }
    if (available < kFrameHeaderBytes) break;
    const auto* at = reinterpret_cast<const uint8_t*>(input_.data()) + consumed;
    const size_t limit = stage_ == Stage::kReady ? kMaxFrameBytes : kMaxHandshakeFrameBytes;
    uint32_t body_length = 0;
    Status length_ok = parseFrameLength(at, limit, &body_length);
    if (!length_ok.ok()) {
      drop(ctx, length_ok.message() + (stage_ == Stage::kReady ? "" : " during the handshake"));
      return;
    }
    if (available < kFrameHeaderBytes + body_length) break;
    handleFrame(ctx, at + kFrameHeaderBytes, body_length);
    if (closed()) return;  // input_ was released
    consumed += kFrameHeaderBytes + body_length;
  }
  if (stage_ == Stage::kClosing) {
    input_.clear();  // a refused peer's further bytes are never honoured
  } else if (!closed()) {
    input_.erase(0, consumed);
  }
}

void StoreSession::handleFrame(SessionContext& ctx, const uint8_t* body, size_t size) {
  FrameReader reader(body, size);
  const auto opcode = static_cast<Opcode>(reader.opcode());
  const bool expected = (stage_ == Stage::kAwaitHello && opcode == Opcode::kHello) ||
                        (stage_ == Stage::kAwaitAuth && opcode == Opcode::kAuth) ||
                        (stage_ == Stage::kReady &&
                         (opcode == Opcode::kSet || opcode == Opcode::kGet ||
                          opcode == Opcode::kAdd || opcode == Opcode::kWait));
  if (!expected) {
    const char* when = stage_ == Stage::kAwaitHello  ? "instead of HELLO"
                       : stage_ == Stage::kAwaitAuth ? "instead of AUTH"
                                                     : "where a request was expected";
    drop(ctx, "sent " + opcodeName(reader.opcode()) + " " + when +
                  " (not a lightcc store client, or a protocol bug)");
    return;
  }
  if (opcode == Opcode::kHello) {
    advanceHandshake(ctx, handshake_.hello(reader), Stage::kAwaitAuth);
  } else if (opcode == Opcode::kAuth) {
    advanceHandshake(ctx, handshake_.auth(ctx.secret, ctx.generation, reader), Stage::kReady);
  } else {
    handleRequest(ctx, reader);
  }
}

void StoreSession::advanceHandshake(SessionContext& ctx, const HandshakeStep& step, Stage next) {
  switch (step.kind) {
    case HandshakeStep::Kind::kReply:
      moveTo(next);
      queue(ctx, step.frame);
      return;
    case HandshakeStep::Kind::kRefuse:
      moveTo(Stage::kClosing);
      deadline_ = Clock::now() + kClosingLinger;
      queue(ctx, FrameWriter(Opcode::kRefuse).u8(static_cast<uint8_t>(step.reason)).str(step.text).finish());
      return;
    case HandshakeStep::Kind::kDrop:
      drop(ctx, step.text);
      return;
  }
}

void StoreSession::handleRequest(SessionContext& ctx, FrameReader& reader) {
  const auto opcode = static_cast<Opcode>(reader.opcode());
  std::string key;
  if (opcode == Opcode::kSet) {
    std::string value;
    reader.str("key", 1, kMaxKeyBytes, &key);
    reader.str("value", 0, kMaxValueBytes, &value);
    if (!reader.finish()) return drop(ctx, "malformed SET: " + reader.error());
    ctx.table.set(key, std::move(value), &ctx.woken);
    queue(ctx, FrameWriter(Opcode::kOk).finish());
  } else if (opcode == Opcode::kGet) {
    uint32_t timeout_ms = 0;
    reader.str("key", 1, kMaxKeyBytes, &key);
    reader.u32("timeout_ms", &timeout_ms);
    if (!reader.finish()) return drop(ctx, "malformed GET: " + reader.error());
    if (const std::string* value = ctx.table.find(key)) {
      queue(ctx, FrameWriter(Opcode::kValue).str(*value).finish());
    } else {
      park(ctx, {std::move(key)}, 0, /*want_value=*/true, timeout_ms);
    }
  } else if (opcode == Opcode::kAdd) {
    int64_t delta = 0;
    int64_t result = 0;
    reader.str("key", 1, kMaxKeyBytes, &key);
    reader.i64("delta", &delta);
    if (!reader.finish()) return drop(ctx, "malformed ADD: " + reader.error());
    Status added = ctx.table.add(key, delta, &result, &ctx.woken);
    queue(ctx, added.ok() ? FrameWriter(Opcode::kCounter).i64(result).finish()
                          : FrameWriter(Opcode::kError).str(added.message()).finish());
  } else {  // kWait, the only other opcode handleFrame lets through in kReady
    uint32_t count = 0;
    uint32_t timeout_ms = 0;
    std::vector<std::string> keys;
    if (reader.u32("count", &count) && count > kMaxWaitKeys) {
      return drop(ctx, "WAIT for " + std::to_string(count) + " keys exceeds the limit of " +
                           std::to_string(kMaxWaitKeys));
    }
    for (uint32_t i = 0; i < count && reader.ok(); ++i) {
      keys.emplace_back();
      reader.str("key", 1, kMaxKeyBytes, &keys.back());
    }
    reader.u32("timeout_ms", &timeout_ms);
    if (!reader.finish()) return drop(ctx, "malformed WAIT: " + reader.error());
    const size_t missing = ctx.table.firstMissing(keys, 0);
    if (missing == keys.size()) {
      queue(ctx, FrameWriter(Opcode::kOk).finish());
    } else {
      park(ctx, std::move(keys), missing, /*want_value=*/false, timeout_ms);
    }
  }
}

void StoreSession::park(SessionContext& ctx, std::vector<std::string> keys, size_t missing,
                        bool want_value, uint32_t timeout_ms) {
  parked_keys_ = std::move(keys);
  parked_missing_ = missing;
  parked_wants_value_ = want_value;
  deadline_ = Clock::now() + std::chrono::milliseconds(timeout_ms);
  ctx.table.watch(parked_keys_[missing], id_);
  moveTo(Stage::kParked);
}

void StoreSession::onKeysChanged(SessionContext& ctx) {
  if (stage_ != Stage::kParked) return;
  const size_t next = ctx.table.firstMissing(parked_keys_, parked_missing_);
  if (next == parked_missing_) return;  // still registered on that key
  if (next < parked_keys_.size()) {
    parked_missing_ = next;
    ctx.table.watch(parked_keys_[next], id_);
    return;
  }
  std::string reply = parked_wants_value_
                          ? FrameWriter(Opcode::kValue).str(*ctx.table.find(parked_keys_[0])).finish()
                          : FrameWriter(Opcode::kOk).finish();
  parked_keys_.clear();
  moveTo(Stage::kReady);
  queue(ctx, std::move(reply));
  processInput(ctx);
}

void StoreSession::onTimer(SessionContext& ctx, Clock::time_point now) {
  if (now < nextDeadline()) return;
  switch (stage_) {
    case Stage::kAwaitHello:
    case Stage::kAwaitAuth:
      storeLog("refused " + handshake_.who() + ": no complete handshake before the deadline");
      close(ctx);
      break;
    case Stage::kParked: {
      ctx.table.unwatch(parked_keys_[parked_missing_], id_);
      const auto missing = static_cast<uint32_t>(parked_missing_);
      parked_keys_.clear();
      moveTo(Stage::kReady);
      queue(ctx, frameTimedOut(missing));
      processInput(ctx);
      break;
    }
    case Stage::kClosing:
      close(ctx);
      break;
    case Stage::kReady:
    case Stage::kClosed:
      break;
  }
}

void StoreSession::queue(SessionContext& ctx, std::string frame) {
  output_.append(std::move(frame));
  flush(ctx);
}

void StoreSession::flush(SessionContext& ctx) {
  if (closed()) return;
  const int err = output_.sendTo(fd_.get());
  if (err != 0) {
    errno = err;
    if (stage_ == Stage::kClosing || errno == EPIPE || errno == ECONNRESET) {
      close(ctx);  // the peer went away; nothing to report
    } else {
      drop(ctx, errnoMessage("send of " + std::to_string(output_.size()) + " bytes", errno));
    }
    return;
  }
  if (stage_ == Stage::kClosing) output_.shutWhenEmpty(fd_.get());
}

void StoreSession::drop(SessionContext& ctx, const std::string& why) {
  storeLog("dropped " + handshake_.who() + ": " + why);
  close(ctx);
}

void StoreSession::close(SessionContext& ctx) {
  if (stage_ == Stage::kParked) ctx.table.unwatch(parked_keys_[parked_missing_], id_);
  parked_keys_.clear();
  fd_.reset();
  input_.clear();
  output_.clear();
  moveTo(Stage::kClosed);
}

}  // namespace rendezvous
}  // namespace lightcc
