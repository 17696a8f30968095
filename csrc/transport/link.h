// Link: an ordered, reliable, bidirectional byte channel to one peer rank, NCCL-net shaped.
//
// DESIGN. Algorithms and the negotiator talk to peers only through Links. Two kinds exist:
// shm::ShmLink (a pair of lock-free SPSC rings in shared memory, for peers on this host) and
// net::NetLink (a send comm + a recv comm of a NCCL net plugin, i.e. HARP, for other hosts).
// A Link is owned and used by exactly one thread (the engine's background thread); it needs no
// locks. Calls never block: isend/irecv post work and return a request, test() makes progress and
// reports completion. Sends and receives each complete in posting order; a receive buffer may be
// larger than the message (test() reports the real size), a smaller one is an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "common/status.h"

namespace lightcc {

// An opaque in-flight operation. Owned by the Link that made it; valid until test() reports
// done (or until the Link is destroyed). At most kMaxLinkRequests may be in flight per direction.
struct LinkRequest;
constexpr int kMaxLinkRequests = 32;

class Link {
 public:
  virtual ~Link() = default;

  // Posts a send of `size` bytes. `data` must stay valid and unchanged until done.
  // *req is null when the link is at its in-flight limit: make progress (test) and retry.
  virtual Status isend(const void* data, size_t size, LinkRequest** req) = 0;
  // Posts a receive into `data` of `capacity` bytes.
  virtual Status irecv(void* data, size_t capacity, LinkRequest** req) = 0;
  // Non-blocking. On done, *size is the number of bytes transferred and req is released.
  virtual Status test(LinkRequest* req, bool* done, size_t* size) = 0;

  // The global rank at the other end, for error messages and routing.
  virtual int peer() const = 0;
  // "shm" or "net:<plugin name>", for logs and the timeline.
  virtual std::string kind() const = 0;
  // Does finishing a request here ring this rank's doorbell, so a waiter may sleep until rung?
  // Shared memory always does; a network link when its plugin has a completion hook installed.
  virtual bool ringsDoorbell() const { return false; }
  // Where the peer listens ("10.0.0.4:40123"), for net links; "" where there is no address.
  virtual std::string peerAddress() const { return ""; }

  // The peer's host id (LIGHTCC_HOSTNAME), told by whoever builds the link: a peer-caused error
  // must let the user find the machine, not only the rank.
  void setPeerHost(std::string host) { peer_host_ = std::move(host); }
  const std::string& peerHost() const { return peer_host_; }
  // "rank 6 (host node3, 10.0.0.4:40123)", or "rank 2 (host node0, shm)": every error a peer
  // causes on this link names it this way.
  std::string describePeer() const {
    const std::string addr = peerAddress();
    return "rank " + std::to_string(peer()) + " (host " + (peer_host_.empty() ? "?" : peer_host_) + ", " +
           (addr.empty() ? kind() : addr) + ")";
  }

 private:
  std::string peer_host_;
};

}  // namespace lightcc
