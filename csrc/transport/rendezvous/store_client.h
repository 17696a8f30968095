// store_client: one rank's authenticated connection to the rendezvous store (set/get/add/wait).
//
// Thread-safety: every call takes the client's mutex, so threads may share one client; calls are
// then served one at a time. A call whose reply never arrives or is malformed leaves the byte
// stream in an unknown state: the client remembers that error and returns it from every later
// call (make a new client to retry). Wire format and handshake: store_wire.h.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/rendezvous/socket_util.h"

namespace lightcc {
namespace rendezvous {

class StoreClient {
 public:
  // Connects to host:port and runs the handshake, retrying refused connections until timeout_s
  // (rank 0 may start later than this rank). `timeout_s` also bounds set/add replies later.
  // Errors: Timeout (nobody listening in time), PeerFailure (refused: job secret mismatch, stale
  // generation, protocol version; or a server that cannot prove the secret).
  static Status connect(const std::string& host, int port, const std::string& secret,
                        uint64_t generation, int rank, double timeout_s,
                        std::unique_ptr<StoreClient>* out);

  Status set(const std::string& key, const std::string& value);
  // Blocks until `key` exists (then fills *value) or timeout_s passes (Status::Timeout naming it).
  Status get(const std::string& key, std::string* value, double timeout_s);
  // Atomically adds delta to the decimal counter at key (absent = 0); *result is the new value.
  Status add(const std::string& key, int64_t delta, int64_t* result);
  // Blocks until every key exists, or Status::Timeout naming a missing one.
  Status wait(const std::vector<std::string>& keys, double timeout_s);

  // "host:port" of the server, for messages.
  const std::string& server() const { return server_; }
  int rank() const { return rank_; }

 private:
  struct PassKey {
    explicit PassKey() = default;
  };

 public:
  StoreClient(PassKey, UniqueFd fd, std::string server, int rank, double io_timeout_s);

 private:
  // Sends one request frame and reads one reply body; marks the client broken on I/O failure.
  Status roundTrip(const std::string& request, double reply_timeout_s, const std::string& what,
                   std::string* reply_body);
  Status unexpectedReply(const std::string& what, const std::string& reply_body);
  std::string prefix() const;

  std::mutex mutex_;
  UniqueFd fd_;
  const std::string server_;
  const int rank_;
  const double io_timeout_s_;
  Status broken_;  // OK until the stream is unusable
};

}  // namespace rendezvous
}  // namespace lightcc
