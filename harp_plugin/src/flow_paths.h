// SendPath and RecvPath: how an instance moves one flow's chunks, each direction on its own.
//
// DESIGN. Both belong to one Worker (worker.h) and run on its thread only, like the flows they
// move: no locks. The Worker's loop hands each flow of a send lane to its SendPath and each flow
// of a receive lane to its RecvPath. The send side owns the zero-copy machinery (the mode in
// force, the instance's io_uring, flows closed while completions are still owed); the receive
// side needs nothing but the instance's epoll set.
#pragma once

#include <memory>
#include <vector>

#include "comm.h"
#include "flow.h"
#include "params.h"
#include "uring.h"

namespace harp {

// Marks `f` broken once: fails its comm (naming the peer, the flow and `what`, with errno `err`
// when non-zero) and takes its socket out of the instance's epoll set `epfd`.
void breakFlow(Flow& f, int epfd, ncclResult_t code, const char* what, int err);

class SendPath {
 public:
  // Sets up zero-copy for instance `index`: io_uring SEND_ZC when asked for or automatic and
  // available (its eventfd joins `epfd`, tagged with this object), else MSG_ZEROCOPY.
  SendPath(int index, int epfd, ZeroCopyMode zc_mode);
  ZeroCopyMode zcMode() const { return zc_mode_; }
  bool zcForced() const { return zc_forced_; }  // HARP_ZC=uring|msg: even to local peers (tests)
  int uringEventFd() const { return uring_ != nullptr ? uring_->eventFd() : -1; }

  bool progress(Flow& f);  // one loop turn's writes for `f`; true when it moved
  void retireExhausted(Lane& lane);
  // Consumes io_uring completions (no-op without a ring); true while sends are still owed ones.
  void reapCompletions();
  bool completionsOwed() const { return uring_ != nullptr && uring_->inflight() > 0; }
  // A flow closed while zero-copy completions are owed: kept until they arrive.
  void bury(std::unique_ptr<Flow> f) { graveyard_.push_back(std::move(f)); }
  void closeGraveyard();

 private:
  bool claimChunk(Flow& f);
  bool sendCopy(Flow& f);
  bool sendZeroCopyMsg(Flow& f);
  bool sendZeroCopyUring(Flow& f);
  void reapErrqueue(Flow& f);
  void reapUring();
  void releaseZc(Flow& f, uint32_t id);
  void checkSendPeer(Flow& f);

  int epfd_;
  ZeroCopyMode zc_mode_;
  bool zc_forced_;
  std::unique_ptr<Uring> uring_;
  std::vector<std::unique_ptr<Flow>> graveyard_;  // closed flows still owed io_uring completions
};

class RecvPath {
 public:
  explicit RecvPath(int epfd) : epfd_(epfd) {}
  bool progress(Flow& f);  // one loop turn's reads for `f`; true when it moved

 private:
  bool readHeader(Flow& f);
  bool lookupRecv(Flow& f);
  bool readPayload(Flow& f);
  void flowEof(Flow& f);

  int epfd_;
};

}  // namespace harp
