// store_client: one rank's authenticated connection to lightcc's rendezvous store (a Store).
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
#include "transport/rendezvous/store.h"

namespace lightcc {
namespace rendezvous {

class StoreClient : public Store {
 public:
  // Connects to host:port and runs the handshake, retrying refused connections until timeout_s
  // (rank 0 may start later than this rank). `timeout_s` also bounds set/add replies later.
  // Errors: Timeout (nobody listening in time), PeerFailure (refused: job secret mismatch, stale
  // generation, protocol version; or a server that cannot prove the secret).
  static Status connect(const std::string& host, int port, const std::string& secret,
                        uint64_t generation, int rank, double timeout_s,
                        std::unique_ptr<StoreClient>* out);

  Status set(const std::string& key, const std::string& value) override;
  Status get(const std::string& key, std::string* value, double timeout_s) override;
  Status add(const std::string& key, int64_t delta, int64_t* result) override;
  Status wait(const std::vector<std::string>& keys, double timeout_s) override;
  std::string where() const override { return "lightcc's store at " + server_; }

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
