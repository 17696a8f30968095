// HostGroup: this rank's view of every rank on its host: mapped areas (HostAreas), wakeups, and waiting.
//
// DESIGN. A HostGroup is one *channel's* view of the mapped areas (see rank_area.h): channel 0
// belongs to the engine's background thread, channel c >= 1 to stream worker c (made with
// channel(c), sharing the mapping). Each view is used by its one thread, except wakeSelf(),
// which caller threads use after enqueueing work. Waiting spins for LIGHTCC_SPIN_US, then sleeps
// on this rank's doorbell futex of the channel; whoever changes state another rank may wait on
// calls wake(peer), which rings the same channel's doorbell over there.
// Waits that involve peers check their liveness (a dead or zombie pid fails the wait at once),
// an optional abort flag (the engine failed elsewhere), and give up after LIGHTCC_TIMEOUT
// without progress.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/shm/rank_area.h"
#include "transport/shm/segment.h"

namespace lightcc::shm {

struct WaitOptions {
  double spin_us = 50.0;
  // More ranks on this host than cores: a waiter yields its core from the first poll, since the
  // peer it waits for may be queued behind it (otherwise after a few microseconds of pure spin).
  bool oversubscribed = false;
  double timeout_s = 60.0;
  double peer_check_s = 1.0;  // the budget of an error's peer check (common/config.h peerCheckSeconds)
  // With links that cannot ring our doorbell (network), sleeps are capped so polls continue.
  double max_sleep_us = 1e6;
  std::string host_id;  // this host's id (LIGHTCC_HOSTNAME), for naming peers in errors
};

// HostAreas: where everything of one channel lives in the host's mapped rank areas (rank_area.h):
// address arithmetic only, no waiting. Shares the mapping with its other channels' views.
class HostAreas {
 public:
  int channelIndex() const { return channel_; }
  int localRank() const { return local_rank_; }
  int localSize() const { return static_cast<int>(global_ranks_.size()); }
  int globalRank(int li) const { return global_ranks_[li]; }
  // Local index of a global rank, or -1 if it lives on another host.
  int localIndexOf(int global_rank) const;
  const RankAreaLayout& layout() const { return layout_; }

  RankHeader* header(int li) const;
  Bell* bell(int li) const { return &header(li)->bells[channel_]; }
  std::atomic<uint64_t>& counter(int li, int slot) const;
  char* meta(int li) const;
  char* staging(int li) const;  // null on a channel without a staging area
  RingHeader* ring(int owner_li, int from_li) const;
  char* ringData(int owner_li, int from_li) const;

  // The direct exchange's area and payload slots (null without one: a job over several hosts).
  DirectArea* direct(int li) const;
  char* directPayload(int li, int parity) const;

 protected:
  HostAreas(int local_rank, std::vector<int> global_ranks, std::vector<std::unique_ptr<ShmSegment>> segments,
            RankAreaLayout layout);
  HostAreas(const HostAreas& base, int channel);  // channel c's view of base's mapping

 private:
  struct Mapping {
    std::vector<std::unique_ptr<ShmSegment>> segments;
    std::vector<char*> bases;
  };
  int local_rank_;
  std::vector<int> global_ranks_;
  std::shared_ptr<const Mapping> map_;
  const std::vector<char*>* bases_;
  RankAreaLayout layout_;
  int channel_ = 0;
};

// HostGroup: waiting and waking on those areas, peers' liveness, and the staging ledger.
class HostGroup : public HostAreas {
 public:
  HostGroup(int local_rank, std::vector<int> global_ranks,
            std::vector<std::unique_ptr<ShmSegment>> segments, RankAreaLayout layout,
            WaitOptions options);
  // Another channel's view of the same mapping (which it keeps alive); c < layout().channels.
  std::unique_ptr<HostGroup> channel(int c) const;
  using HostAreas::ring;

  // Makes rank li's engine look again if it sleeps. Cheap when it does not.
  void wake(int li) const;
  // Makes rank li's callers waiting in the direct exchange look again.
  void wakeDirect(int li) const { ring(&direct(li)->bell); }
  // This rank will not take direct steps for a while (a join pending, shut down): peers waiting
  // in one decline it at once instead of waiting out their window. No-op without a direct area.
  void setDirectAway(bool away) const;
  // Thread-safe: wakes this rank's own engine (after a local enqueue).
  void wakeSelf() const { wake(localRank()); }

  // Blocks until ready() is true. `what` names the wait in errors. With check_peers, peer death
  // and LIGHTCC_TIMEOUT fail the wait; without, it waits as long as it takes (idle engine) but
  // returns after max_wait_us so the caller can run timers. Without `spin` it sleeps at once
  // (an idle engine must not take a core from the thread that is doing the work).
  // Several threads of this rank may wait at once (the engine thread and a caller driving it).
  // `doorbell_only`: everything this wait needs rings this rank's doorbell (shared memory, no
  // network link), so it sleeps as on a channel without network links, past max_sleep_us: on a
  // host of many ranks, waits capped for network polling wake thousands of times a second.
  Status waitUntil(const std::function<bool()>& ready, const std::string& what, bool check_peers,
                   double max_wait_us = -1, bool spin = true, bool doorbell_only = false) const;
  // waitUntil for an engine with nothing pending (no spin, no peer checks): network links are
  // polled at max_sleep_us for the first kIdleFastPollUs, then only every kIdlePollUs, so an
  // engine idle between steps does not wake thousands of times a second on a core the training
  // thread needs. Only a message from another host is seen up to kIdlePollUs late.
  Status waitIdle(const std::function<bool()>& ready, const std::string& what, double max_wait_us,
                  bool doorbell_only) const;
  // waitUntil for a caller in the direct exchange, on the direct area's doorbell (peers' checks
  // included); after max_wait_us it returns OK with ready() still false.
  Status waitDirect(const std::function<bool()>& ready, const std::string& what, double max_wait_us) const;
  // The wait's first phase: spins (yielding the core after a few microseconds, or at once when
  // oversubscribed) for spin_us; true when `ready` came true.
  bool spinUntil(const std::function<bool()>& ready, std::chrono::steady_clock::time_point start, int pauses) const;

  // Staging ledger. A single-barrier collective publishes its staging and leaves without a
  // closing barrier, so peers may still be reading when this rank moves on. The publisher
  // records each read it is owed; a reader reports each read it finished (in its own area);
  // whoever writes this channel's staging next waits until nothing is owed. Usually nothing
  // is by then, so the common case costs a few loads instead of a barrier per operation.
  void oweRead(int reader_li) const { ++reads_owed_[reader_li]; }
  void readDone(int owner_li) const;
  Status waitStagingFree() const;

  // "rank 3 (host node0, pid 1234)": how errors name local peer li.
  std::string describeLocal(int li) const;
  // Returns PeerFailure naming the first local peer whose process is gone or whose engine has
  // stopped on an error (markFailed).
  Status checkPeersAlive() const;
  // This rank's engine stopped on an error: tell host peers (their waits fail with `why`).
  void markFailed(const std::string& why) const;
  void setMaxSleepUs(double us) { options_.max_sleep_us = us; }
  double peerCheckSeconds() const { return options_.peer_check_s; }
  // Waits with check_peers fail with Aborted once *flag is true; the flag must outlive the view.
  void setAbortFlag(const std::atomic<bool>* flag) { abort_ = flag; }

 private:
  HostGroup(const HostGroup& base, int channel);
  static void ring(Bell* b);
  struct WaitShape {  // how waitOn sleeps besides its options_
    bool spin = true;
    bool doorbell_only = false;
    bool idle = false;  // waitIdle's slower network polling once idle a while
    int pauses = 64;
  };
  Status waitOn(Bell* me, const std::function<bool()>& ready, const std::string& what, bool check_peers,
                double max_wait_us, WaitShape shape) const;

  WaitOptions options_;
  const std::atomic<bool>* abort_ = nullptr;
  // The ledger is this view's own (one thread uses a channel), hence mutable on a const view.
  mutable std::vector<uint64_t> reads_owed_;  // per local reader: reads of my staging owed me
  mutable std::vector<uint64_t> reads_done_;  // per local owner: reads of its staging I finished
};

}  // namespace lightcc::shm
