// NetLink: a Link to a peer on another host over one send comm + one recv comm of a net plugin.
//
// DESIGN. Owned and used by the engine's background thread only (like every Link); the plugin's
// own threads are invisible here. Messages larger than the plugin's per-message limit
// (maxMessageBytes, < 2 GiB) are cut into parts of M bytes; a message whose size is a multiple
// of M (including 0) ends with one empty part, so every message ends with a part shorter than M
// and the receiver, which does not know the size in advance, stops at the first short part.
// Receives of capacity < M are therefore always one part and are posted eagerly; a larger
// receive posts its parts one at a time and holds back later receives until it has ended.
// Registration: NCCL registers long-lived buffers once; the engine passes arbitrary buffers, so
// NetLink keeps a small LRU cache of registrations per comm (a hit when a buffer lies inside a
// cached region, e.g. the fusion buffer) and registers the exact range on a miss. Entries in use
// by an in-flight request are never evicted. With HARP registration is bookkeeping (no pinning),
// so a cached range whose memory was freed and reused is harmless; a pinning plugin would need
// the engine to keep its buffers long-lived.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/link.h"
#include "transport/net/net_plugin.h"

namespace lightcc {
namespace net {

// This rank's listen comm, kept open while any of the links made with it lives: a live rank's
// listen address accepts TCP connections, a dead one's refuses them, which is how a survivor
// tells a lost peer from one that is only stuck behind it (peer_probe.h).
struct NetListener {
  NetPlugin* plugin = nullptr;
  void* comm = nullptr;
  NetListener(NetPlugin* p, void* c) : plugin(p), comm(c) {}
  ~NetListener();
  NetListener(const NetListener&) = delete;
  NetListener& operator=(const NetListener&) = delete;
};

class NetLink : public Link {
 public:
  // Takes ownership of both comms (closed in the destructor). `address` is where the peer
  // listens ("" when the plugin's handle does not say); `listener` is shared by a call's links.
  NetLink(NetPlugin* plugin, int peer, void* send_comm, void* recv_comm, std::string address = "",
          std::shared_ptr<NetListener> listener = nullptr);
  ~NetLink() override;

  Status isend(const void* data, size_t size, LinkRequest** req) override;
  Status irecv(void* data, size_t capacity, LinkRequest** req) override;
  Status test(LinkRequest* req, bool* done, size_t* size) override;
  int peer() const override { return peer_; }
  std::string kind() const override { return "net:" + plugin_->info().name; }
  bool ringsDoorbell() const override { return plugin_->completionHook().installed(); }
  std::string peerAddress() const override { return address_; }

  struct Request;  // defined in net_link.cc; handed out as LinkRequest*

 private:
  struct MrEntry {  // one cached registration
    char* base;
    size_t size;
    void* mhandle;
    int in_use;
    uint64_t last_use;
  };
  struct Direction;  // send or receive side state (net_link.cc)

  Status pump(Direction& d);
  Status post(Direction& d, Request& r, bool* posted);

  NetPlugin* plugin_;
  int peer_;
  std::string address_;
  std::shared_ptr<NetListener> listener_;
  std::unique_ptr<Direction> send_;
  std::unique_ptr<Direction> recv_;
  uint64_t clock_ = 0;
};

// Listens once, allgathers the listen handles (one per global rank, via the engine's callback),
// connects to and accepts from every remote peer non-blockingly until all are up or timeout_s
// passes, and returns one Link per remote peer in remote_peers order. Each connector's first
// message is its 4-byte rank, which identifies the accepted comm.
Status connectNetLinks(
    NetPlugin& plugin, int my_rank, const std::vector<int>& remote_peers,
    const std::function<Status(const std::string& my_handle,
                               std::vector<std::string>* all_handles_by_rank)>& allgather_handles,
    double timeout_s, std::vector<std::unique_ptr<Link>>* links_out);

}  // namespace net
}  // namespace lightcc
