// Worker: one HARP engine instance — a thread pinned to a core that owns the flows it serves.
//
// DESIGN (instance). Each instance runs an epoll loop on its own thread. It exclusively owns the
// sockets of the lanes attached to it; no other thread reads, writes or closes them. Work
// arrives two ways:
//   data path: NCCL threads push posted requests into per-lane SPSC rings, then call wake(),
//              which writes the instance's eventfd only if the instance announced it is about to
//              sleep (sleeping_ flag, seq_cst fences on both sides). Completions go back through
//              atomics in the Request. No mutex.
//   busy polling: after doing work the instance keeps polling (its rings, then epoll with a zero
//              timeout, sched_yield between rounds) for HARP_BUSY_POLL_US before it sleeps, because
//              a reply usually follows within tens of microseconds and a sleeping thread costs a
//              wakeup syscall on the producer plus a scheduler round trip. Yielding keeps the
//              spinning cheap for threads that share the core; the bound keeps idle comms free.
//   control path: attach/detach of lanes (connect, accept, close) go through a mutex-protected
//              op list and the same eventfd; detach waits on a condition variable until the
//              instance dropped the lane and closed its fds.
// Each flow moves through the instance's SendPath or RecvPath (flow_paths.h); zero-copy sends use
// the SendPath's own io_uring (SEND_ZC) or MSG_ZEROCOPY on the socket.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm.h"
#include "flow.h"
#include "flow_paths.h"
#include "params.h"

namespace harp {

class Worker {
 public:
  // Starts the thread, pinned to `core` (-1: not pinned).
  Worker(int index, int core, ZeroCopyMode zc_mode, int busy_poll_us);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void attach(Lane* lane);   // control path; returns at once
  void detach(Lane* lane);   // control path; blocks until the lane's fds are closed
  void wake();               // data path; cheap when the instance is busy
  // data path (receives): wakes only if a flow of `lane` is parked waiting for a post; otherwise
  // the instance finds the post on its own when the chunk's bytes wake it.
  void wakeIfParked(const Lane& lane);
  int index() const { return index_; }
  const char* zcName() const;

 private:
  struct CtlOp {
    Lane* lane;
    bool attach;
    bool* done;
  };

  void run();
  bool applyControl();
  void addLane(Lane* lane);
  void dropLane(Lane* lane);
  bool drainRings();
  int handleEvents(int timeout_ms);
  bool anyWork() const;
  void governFlows(Lane& lane);  // a send lane's governor sees the pass; logs when its count moves

  int index_;
  int core_;
  int busy_poll_us_;
  int epfd_ = -1;
  int evfd_ = -1;
  std::unique_ptr<SendPath> send_;  // made once epfd_ is
  std::unique_ptr<RecvPath> recv_;
  std::vector<Lane*> lanes_;
  std::atomic<bool> stop_{false};
  alignas(64) std::atomic<bool> sleeping_{false};
  alignas(64) std::atomic<bool> ctl_pending_{false};
  std::mutex ctl_mu_;
  std::condition_variable ctl_cv_;
  std::vector<CtlOp> ctl_ops_;
  std::thread thread_;
};

}  // namespace harp
