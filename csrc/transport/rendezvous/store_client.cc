// Rendezvous store client: connect with retry, the client half of the handshake, requests.
#include "transport/rendezvous/store_client.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "transport/rendezvous/store_crypto.h"
#include "transport/rendezvous/store_auth.h"
#include "transport/rendezvous/store_wire.h"

namespace lightcc {
namespace rendezvous {
namespace {

// Reads one frame (header + body) whose body may be at most `limit` bytes.
Status readFrame(int fd, const Deadline& deadline, size_t limit, const std::string& peer,
                 const std::string& what, std::string* body) {
  uint8_t header[kFrameHeaderBytes];
  LIGHTCC_RETURN_IF_ERROR(recvAll(fd, header, sizeof(header), deadline, peer, what));
  uint32_t length = 0;
  Status length_ok = parseFrameLength(header, limit, &length);
  if (!length_ok.ok()) {
    return Status::PeerFailure(peer + " sent a bad " + what + ": " + length_ok.message());
  }
  body->resize(length);
  return recvAll(fd, &(*body)[0], length, deadline, peer, what);
}

Status sendFrame(int fd, const std::string& frame, const Deadline& deadline,
                 const std::string& peer, const std::string& what) {
  return sendAll(fd, frame.data(), frame.size(), deadline, peer, what);
}

FrameReader readerOf(const std::string& body) {
  return FrameReader(reinterpret_cast<const uint8_t*>(body.data()), body.size());
}

Status refusal(const std::string& rank_prefix, const std::string& server, FrameReader& reader) {
  uint8_t reason = 0;
  std::string detail;
  reader.u8("reason", &reason);
  reader.str("detail", 0, kMaxHandshakeFrameBytes, &detail);
  if (!reader.finish()) {
    return Status::PeerFailure(rank_prefix + "rendezvous server at " + server +
                               " sent a malformed REFUSE: " + reader.error());
  }
  std::string why;
  switch (static_cast<RefuseReason>(reason)) {
    case RefuseReason::kBadSecret:
      why = "job secret mismatch (set LIGHTCC_JOB_SECRET to the same value for every rank; "
            "lightccrun does this, or an old job may still own this address)";
      break;
    case RefuseReason::kStaleGeneration:
      why = detail + " (this process's init/shutdown cycles are out of step with rank 0's)";
      break;
    case RefuseReason::kBadVersion:
      why = "protocol version mismatch: " + detail + " (run the same lightcc on every rank)";
      break;
  }
  if (why.empty()) why = refuseReasonName(reason) + ": " + detail;  // a code from a newer server
  return Status::PeerFailure(rank_prefix + "rendezvous server at " + server +
                             " refused this process: " + why);
}

// The client half of the handshake in store_wire.h.
Status handshake(int fd, const std::string& server, const std::string& secret, uint64_t generation,
                 int rank, const Deadline& deadline) {
  const std::string rank_prefix = "rank " + std::to_string(rank) + ": ";
  const std::string peer = rank_prefix + "rendezvous server at " + server;
  HandshakeTranscript transcript;
  transcript.generation = generation;
  transcript.rank = rank;
  LIGHTCC_RETURN_IF_ERROR(generateNonce(transcript.client_nonce.data(), kNonceBytes));
  std::string hello = FrameWriter(Opcode::kHello)
                          .raw(kProtocolMagic, sizeof(kProtocolMagic))
                          .u16(transcript.version)
                          .u64(transcript.generation)
                          .i32(transcript.rank)
                          .raw(transcript.client_nonce.data(), kNonceBytes)
                          .finish();
  LIGHTCC_RETURN_IF_ERROR(sendFrame(fd, hello, deadline, peer, "HELLO"));

  std::string body;
  LIGHTCC_RETURN_IF_ERROR(
      readFrame(fd, deadline, kMaxHandshakeFrameBytes, peer, "handshake CHALLENGE", &body));
  FrameReader challenge = readerOf(body);
  if (challenge.opcode() == static_cast<uint8_t>(Opcode::kRefuse)) {
    return refusal(rank_prefix, server, challenge);
  }
  if (challenge.opcode() != static_cast<uint8_t>(Opcode::kChallenge)) {
    return Status::PeerFailure(peer + " answered HELLO with " + opcodeName(challenge.opcode()) +
                               ", expected CHALLENGE (is it a lightcc rendezvous store?)");
  }
  challenge.raw("nonce", transcript.server_nonce.data(), kNonceBytes);
  if (!challenge.finish()) {
    return Status::PeerFailure(peer + " sent a malformed CHALLENGE: " + challenge.error());
  }

  const Proof mine = clientProof(secret, transcript);
  LIGHTCC_RETURN_IF_ERROR(
      sendFrame(fd, FrameWriter(Opcode::kAuth).raw(mine.data(), mine.size()).finish(), deadline,
                peer, "AUTH"));

  LIGHTCC_RETURN_IF_ERROR(
      readFrame(fd, deadline, kMaxHandshakeFrameBytes, peer, "handshake WELCOME", &body));
  FrameReader verdict = readerOf(body);
  if (verdict.opcode() == static_cast<uint8_t>(Opcode::kRefuse)) {
    return refusal(rank_prefix, server, verdict);
  }
  if (verdict.opcode() != static_cast<uint8_t>(Opcode::kWelcome)) {
    return Status::PeerFailure(peer + " answered AUTH with " + opcodeName(verdict.opcode()) +
                               ", expected WELCOME or REFUSE");
  }
  Proof theirs;
  verdict.raw("proof", theirs.data(), theirs.size());
  if (!verdict.finish()) {
    return Status::PeerFailure(peer + " sent a malformed WELCOME: " + verdict.error());
  }
  if (!proofMatches(serverProof(secret, transcript), theirs)) {
    return Status::PeerFailure(peer + " could not prove the job secret: it is not this job's " +
                               "store (job secret mismatch; check LIGHTCC_RENDEZVOUS_ADDR and " +
                               "LIGHTCC_JOB_SECRET)");
  }
  return Status::OK();
}

std::string formatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", s);
  return buf;
}

Status checkKey(const std::string& key) {
  if (key.empty() || key.size() > kMaxKeyBytes) {
    return Status::InvalidArgument("rendezvous key of " + std::to_string(key.size()) +
                                   " bytes; allowed 1.." + std::to_string(kMaxKeyBytes));
  }
  return Status::OK();
}

Status timeoutMs(double timeout_s, const std::string& what, uint32_t* ms) {
  if (!(timeout_s >= 0)) {
    return Status::InvalidArgument(what + ": timeout " + formatSeconds(timeout_s) +
                                   " is negative or NaN");
  }
  const double limit = static_cast<double>(std::numeric_limits<uint32_t>::max());
  *ms = static_cast<uint32_t>(std::min(std::ceil(timeout_s * 1000.0), limit));
  return Status::OK();
}

std::string quoted(const std::string& key) { return "'" + key + "'"; }


}  // namespace

Status StoreClient::connect(const std::string& host, int port, const std::string& secret,
                            uint64_t generation, int rank, double timeout_s,
                            std::unique_ptr<StoreClient>* out) {
  if (secret.empty()) {
    return Status::InvalidArgument("rank " + std::to_string(rank) +
                                   ": empty job secret for the rendezvous store " +
                                   "(LIGHTCC_JOB_SECRET)");
  }
  if (!(timeout_s >= 0)) {
    return Status::InvalidArgument("rank " + std::to_string(rank) + ": rendezvous connect timeout " +
                                   formatSeconds(timeout_s) + " is negative or NaN");
  }
  const Deadline deadline = Deadline::after(timeout_s);
  const std::string server = hostPort(host, port);
  UniqueFd fd;
  Status connected = connectWithRetry(host, port, deadline, &fd);
  if (!connected.ok()) return connected.withContext("rank " + std::to_string(rank));
  LIGHTCC_RETURN_IF_ERROR(handshake(fd.get(), server, secret, generation, rank, deadline));
  *out = std::make_unique<StoreClient>(PassKey{}, std::move(fd), server, rank, timeout_s);
  return Status::OK();
}

StoreClient::StoreClient(PassKey, UniqueFd fd, std::string server, int rank, double io_timeout_s)
    : fd_(std::move(fd)), server_(std::move(server)), rank_(rank), io_timeout_s_(io_timeout_s) {}

std::string StoreClient::prefix() const {
  return "rank " + std::to_string(rank_) + ": rendezvous ";
}

Status StoreClient::roundTrip(const std::string& request, double reply_timeout_s,
                              const std::string& what, std::string* reply_body) {
  if (!broken_.ok()) return broken_;
  const Deadline deadline = Deadline::after(reply_timeout_s);
  const std::string peer = prefix() + "server at " + server_;
  Status st = sendFrame(fd_.get(), request, deadline, peer, what);
  if (st.ok()) st = readFrame(fd_.get(), deadline, kMaxFrameBytes, peer, "reply to " + what, reply_body);
  if (!st.ok()) {
    broken_ = Status(st.code(), st.message() + " (this store connection is unusable now)");
    fd_.reset();
  }
  return st;
}

Status StoreClient::unexpectedReply(const std::string& what, const std::string& reply_body) {
  const uint8_t opcode = reply_body.empty() ? 0 : static_cast<uint8_t>(reply_body[0]);
  broken_ = Status::PeerFailure(prefix() + "server at " + server_ + " answered " + what + " with " +
                                opcodeName(opcode) + " (malformed or unexpected reply)");
  fd_.reset();
  return broken_;
}

Status StoreClient::set(const std::string& key, const std::string& value) {
  LIGHTCC_RETURN_IF_ERROR(checkKey(key));
  if (value.size() > kMaxValueBytes) {
    return Status::InvalidArgument(prefix() + "value of " + std::to_string(value.size()) +
                                   " bytes for key " + quoted(key) + " exceeds the limit of " +
                                   std::to_string(kMaxValueBytes));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string what = "SET " + quoted(key);
  std::string reply;
  LIGHTCC_RETURN_IF_ERROR(
      roundTrip(FrameWriter(Opcode::kSet).str(key).str(value).finish(), io_timeout_s_, what, &reply));
  FrameReader reader = readerOf(reply);
  if (reader.opcode() != static_cast<uint8_t>(Opcode::kOk) || !reader.finish()) {
    return unexpectedReply(what, reply);
  }
  return Status::OK();
}

Status StoreClient::get(const std::string& key, std::string* value, double timeout_s) {
  LIGHTCC_RETURN_IF_ERROR(checkKey(key));
  const std::string what = "GET " + quoted(key);
  uint32_t ms = 0;
  LIGHTCC_RETURN_IF_ERROR(timeoutMs(timeout_s, prefix() + what, &ms));
  std::lock_guard<std::mutex> lock(mutex_);
  std::string reply;
  LIGHTCC_RETURN_IF_ERROR(roundTrip(FrameWriter(Opcode::kGet).str(key).u32(ms).finish(),
                                    timeout_s + io_timeout_s_, what, &reply));
  FrameReader reader = readerOf(reply);
  if (reader.opcode() == static_cast<uint8_t>(Opcode::kTimedOut)) {
    uint32_t index = 0;
    if (!reader.u32("index", &index) || !reader.finish()) return unexpectedReply(what, reply);
    return Status::Timeout(prefix() + "get of key " + quoted(key) + " from " + server_ +
                           " timed out after " + formatSeconds(timeout_s) +
                           ": no process has set it");
  }
  if (reader.opcode() != static_cast<uint8_t>(Opcode::kValue) ||
      !reader.str("value", 0, kMaxValueBytes, value) || !reader.finish()) {
    return unexpectedReply(what, reply);
  }
  return Status::OK();
}

Status StoreClient::add(const std::string& key, int64_t delta, int64_t* result) {
  LIGHTCC_RETURN_IF_ERROR(checkKey(key));
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string what = "ADD " + quoted(key);
  std::string reply;
  LIGHTCC_RETURN_IF_ERROR(roundTrip(FrameWriter(Opcode::kAdd).str(key).i64(delta).finish(),
                                    io_timeout_s_, what, &reply));
  FrameReader reader = readerOf(reply);
  if (reader.opcode() == static_cast<uint8_t>(Opcode::kError)) {
    std::string detail;
    if (!reader.str("detail", 0, kMaxValueBytes, &detail) || !reader.finish()) {
      return unexpectedReply(what, reply);
    }
    return Status::InvalidArgument(prefix() + detail);
  }
  if (reader.opcode() != static_cast<uint8_t>(Opcode::kCounter) ||
      !reader.i64("counter", result) || !reader.finish()) {
    return unexpectedReply(what, reply);
  }
  return Status::OK();
}

Status StoreClient::wait(const std::vector<std::string>& keys, double timeout_s) {
  if (keys.empty()) return Status::OK();
  const std::string what = "WAIT for " + std::to_string(keys.size()) + " keys";
  if (keys.size() > kMaxWaitKeys) {
    return Status::InvalidArgument(prefix() + what + " exceeds the limit of " +
                                   std::to_string(kMaxWaitKeys) + " keys per wait");
  }
  uint32_t ms = 0;
  LIGHTCC_RETURN_IF_ERROR(timeoutMs(timeout_s, prefix() + what, &ms));
  FrameWriter request(Opcode::kWait);
  request.u32(static_cast<uint32_t>(keys.size()));
  for (const std::string& key : keys) {
    LIGHTCC_RETURN_IF_ERROR(checkKey(key));
    request.str(key);
  }
  std::string frame = request.u32(ms).finish();
  if (frame.size() - kFrameHeaderBytes > kMaxFrameBytes) {
    return Status::InvalidArgument(prefix() + what + " makes a " + std::to_string(frame.size()) +
                                   "-byte request, over the frame limit; wait in smaller groups");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::string reply;
  LIGHTCC_RETURN_IF_ERROR(roundTrip(frame, timeout_s + io_timeout_s_, what, &reply));
  FrameReader reader = readerOf(reply);
  if (reader.opcode() == static_cast<uint8_t>(Opcode::kTimedOut)) {
    uint32_t index = 0;
    if (!reader.u32("index", &index) || !reader.finish() || index >= keys.size()) {
      return unexpectedReply(what, reply);
    }
    return Status::Timeout(prefix() + "wait for " + std::to_string(keys.size()) + " keys on " +
                           server_ + " timed out after " + formatSeconds(timeout_s) +
                           "; key " + quoted(keys[index]) + " (index " +
                           std::to_string(index) + ") is still missing");
  }
  if (reader.opcode() != static_cast<uint8_t>(Opcode::kOk) || !reader.finish()) {
    return unexpectedReply(what, reply);
  }
  return Status::OK();
}

}  // namespace rendezvous
}  // namespace lightcc
