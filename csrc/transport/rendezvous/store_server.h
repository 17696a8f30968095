// store_server: rank 0's rendezvous key-value store, served over TCP by one background thread.
//
// DESIGN. start() binds and listens on the caller's thread (so bind errors come back as a Status)
// and then starts one thread that owns everything else: the listening socket, every client
// session (store_session.h) and the table (store_table.h). That thread polls all sockets plus an
// eventfd; it never blocks on one client, and a client that misbehaves (bad secret, garbage,
// oversized frame, stalled handshake) is refused or dropped with one stderr line while the others
// are served on. The destructor rings the eventfd, joins the thread and closes every socket.
// Wire format and handshake: store_wire.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/status.h"
#include "transport/rendezvous/socket_util.h"
#include "transport/rendezvous/store_session.h"

namespace lightcc {
namespace rendezvous {

class StoreServer {
 public:
  // Binds bind_host:port ("" or "0.0.0.0" = every IPv4 interface, "::" = every interface; port 0
  // = any free port) and starts serving. Clients must prove `secret` (non-empty) and present
  // `generation`.
  static Status start(const std::string& bind_host, int port, const std::string& secret,
                      uint64_t generation, std::unique_ptr<StoreServer>* out);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // The bound port (the one picked when start() was given 0).
  int port() const { return port_; }
  // How many servers this process has started: a path that meets through another store (torch's)
  // must leave it unchanged, and the tests check that it does.
  static uint64_t startedCount();

 private:
  // Lets start() use std::make_unique while nobody else can construct a server.
  struct PassKey {
    explicit PassKey() = default;
  };

 public:
  StoreServer(PassKey, UniqueFd listen_fd, UniqueFd wake_fd, int port, const std::string& secret,
              uint64_t generation);

 private:
  void run();  // the server thread
  void acceptAll();
  void resumeWoken();
  int pollTimeoutMs() const;

  UniqueFd listen_fd_;
  UniqueFd wake_fd_;
  const int port_;
  std::atomic<bool> stopping_{false};

  // Owned by the server thread once it runs.
  SessionContext ctx_;
  std::unordered_map<uint64_t, std::unique_ptr<StoreSession>> sessions_;
  uint64_t next_session_id_ = 1;
  Clock::time_point accept_paused_until_{};

  std::thread thread_;  // last: started after every other member exists
};

}  // namespace rendezvous
}  // namespace lightcc
