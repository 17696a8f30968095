// ShmLink: a Link to a rank on this host over two lock-free SPSC byte rings in shared memory.
//
// DESIGN. Messages are framed as an 8-byte length followed by the payload. A message larger
// than the ring streams through it: test() copies whatever fits or is available and returns;
// the engine thread keeps calling test(). Sends and receives each complete in FIFO order.
// Only the engine thread touches a ShmLink.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "transport/link.h"
#include "transport/shm/host_group.h"

namespace lightcc::shm {

class ShmLink : public Link {
 public:
  ShmLink(const HostGroup* group, int peer_li);
  ~ShmLink() override;

  Status isend(const void* data, size_t size, LinkRequest** req) override;
  Status irecv(void* data, size_t capacity, LinkRequest** req) override;
  Status test(LinkRequest* req, bool* done, size_t* size) override;
  int peer() const override { return group_->globalRank(peer_li_); }
  std::string kind() const override { return "shm"; }
  bool ringsDoorbell() const override { return true; }

 private:
  Status progressSends();
  Status progressRecvs();
  LinkRequest* allocate();
  void release(LinkRequest* r);

  const HostGroup* group_;
  int peer_li_;
  RingHeader* out_;  // in the peer's area; we produce
  char* out_data_;
  RingHeader* in_;  // in our area; we consume
  char* in_data_;
  size_t cap_;
  std::deque<LinkRequest*> sends_;
  std::deque<LinkRequest*> recvs_;
  std::vector<std::unique_ptr<LinkRequest>> pool_;
  std::vector<LinkRequest*> free_;
};

}  // namespace lightcc::shm
