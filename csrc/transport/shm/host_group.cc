// HostAreas and HostGroup: address arithmetic over the mapped areas, futex wakeups, and the waiting policy.
#include "transport/shm/host_group.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "common/interrupt.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LIGHTCC_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define LIGHTCC_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define LIGHTCC_CPU_RELAX() \
  do {                      \
  } while (0)
#endif

namespace lightcc::shm {
namespace {

// How long a wait spins before it starts yielding the core between polls.
constexpr int kPureSpinUs = 3;
// Pause instructions between polls. A pause takes 25-40 ns on current x86 cores, so a wait ends
// up to pauses x that after the store it waits for. The engine's waits keep the 64 they always
// had: each poll runs a progress function (sends, ring tests), and an A/B with one pause a poll
// came out slower at 2 ranks. A direct step's poll is a few loads, and the whole step lasts
// ~2 us: it polls after every pause.
constexpr int kPausesPerPoll = 64;
constexpr int kDirectPausesPerPoll = 1;
// An idle engine on a channel with network links: how long it polls them at max_sleep_us (a step's
// next collective usually comes within this), then how often. 200 us naps forever cost an idle
// rank 5-6 % of a core between emulated hosts (11 us a wake-up), taken from its training thread.
constexpr double kIdleFastPollUs = 20e3;
constexpr double kIdlePollUs = 1e3;

void futexWait(std::atomic<uint32_t>* word, uint32_t expected, double timeout_us) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(timeout_us / 1e6);
  ts.tv_nsec = static_cast<long>((timeout_us - ts.tv_sec * 1e6) * 1e3);
  // Shared (not PRIVATE) futex: the word lives in memory mapped by several processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

// Wakes every sleeper: a rank's engine thread and a caller driving it may both wait on the word.
void futexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

// A pid that is gone or a zombie (exited, not yet reaped by its launcher) is dead to us.
bool processAlive(int pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  std::getline(in, line);
  auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  char state = line[close + 2];
  return state != 'Z' && state != 'X';
}

}  // namespace

HostAreas::HostAreas(int local_rank, std::vector<int> global_ranks, std::vector<std::unique_ptr<ShmSegment>> segments,
                     RankAreaLayout layout)
    : local_rank_(local_rank), global_ranks_(std::move(global_ranks)), layout_(layout) {
  auto map = std::make_shared<Mapping>();
  map->segments = std::move(segments);
  for (auto& s : map->segments) map->bases.push_back(static_cast<char*>(s->base()));
  map_ = map;
  bases_ = &map_->bases;
}

HostAreas::HostAreas(const HostAreas& base, int channel)
    : local_rank_(base.local_rank_),
      global_ranks_(base.global_ranks_),
      map_(base.map_),
      bases_(&map_->bases),
      layout_(base.layout_),
      channel_(channel) {}

HostGroup::HostGroup(int local_rank, std::vector<int> global_ranks,
                     std::vector<std::unique_ptr<ShmSegment>> segments, RankAreaLayout layout,
                     WaitOptions options)
    : HostAreas(local_rank, std::move(global_ranks), std::move(segments), layout), options_(options) {
  reads_owed_.assign(localSize(), 0);
  reads_done_.assign(localSize(), 0);
}

HostGroup::HostGroup(const HostGroup& base, int channel)
    : HostAreas(base, channel), options_(base.options_), reads_owed_(base.localSize(), 0),
      reads_done_(base.localSize(), 0) {}

std::unique_ptr<HostGroup> HostGroup::channel(int c) const {
  return std::unique_ptr<HostGroup>(new HostGroup(*this, c));  // private constructor
}

int HostAreas::localIndexOf(int global_rank) const {
  for (size_t i = 0; i < global_ranks_.size(); ++i) {
    if (global_ranks_[i] == global_rank) return static_cast<int>(i);
  }
  return -1;
}

RankHeader* HostAreas::header(int li) const { return reinterpret_cast<RankHeader*>((*bases_)[li]); }

std::atomic<uint64_t>& HostAreas::counter(int li, int slot) const {
  auto* c = reinterpret_cast<PaddedCounter*>((*bases_)[li] + layout_.counters_off +
                                             layout_.counters_stride * static_cast<size_t>(channel_));
  return c[slot].value;
}

char* HostAreas::meta(int li) const { return (*bases_)[li] + layout_.meta_off + kMetaBytes * static_cast<size_t>(channel_); }

char* HostAreas::staging(int li) const {
  const int area = channel_ - (layout_.channels - layout_.staging_areas);
  if (area < 0) return nullptr;
  return (*bases_)[li] + layout_.staging_off + layout_.staging_bytes * static_cast<size_t>(area);
}

RingHeader* HostAreas::ring(int owner_li, int from_li) const {
  return reinterpret_cast<RingHeader*>((*bases_)[owner_li] + layout_.rings.off +
                                       layout_.rings.channel_stride * static_cast<size_t>(channel_) +
                                       layout_.rings.stride * static_cast<size_t>(from_li));
}

char* HostAreas::ringData(int owner_li, int from_li) const {
  const RingsLayout& r = layout_.rings;
  return reinterpret_cast<char*>(ring(owner_li, from_li)) + (r.stride - ((r.bytes + 4095) / 4096 * 4096));
}

DirectArea* HostAreas::direct(int li) const {
  if (layout_.direct_off == 0) return nullptr;
  return reinterpret_cast<DirectArea*>((*bases_)[li] + layout_.direct_off);
}

char* HostAreas::directPayload(int li, int parity) const {
  return reinterpret_cast<char*>(direct(li)) + sizeof(DirectArea) + layout_.direct_bytes * static_cast<size_t>(parity);
}

void HostGroup::wake(int li) const { ring(bell(li)); }

void HostGroup::setDirectAway(bool away) const {
  if (direct(localRank()) == nullptr) return;
  direct(localRank())->away.value.store(away ? 1 : 0, std::memory_order_seq_cst);
  for (int li = 0; li < localSize(); ++li) {
    if (li != localRank()) wakeDirect(li);
  }
}

void HostGroup::ring(Bell* h) {
  // seq_cst pairs with the sleeper's store to `sleeping` then load of the state it waits on.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (h->sleeping.load(std::memory_order_seq_cst) != 0) {
    h->doorbell.fetch_add(1, std::memory_order_seq_cst);
    futexWake(&h->doorbell);
  }
}

void HostGroup::readDone(int owner_li) const {
  counter(localRank(), kReadDoneSlotBase + owner_li).store(++reads_done_[owner_li], std::memory_order_release);
  // The owner sleeps on this only when it wants its staging back before we were done.
  wake(owner_li);
}

Status HostGroup::waitStagingFree() const {
  auto owes = [&](int li) {
    return li != localRank() &&
           counter(li, kReadDoneSlotBase + localRank()).load(std::memory_order_acquire) < reads_owed_[li];
  };
  auto ready = [&] {
    for (int li = 0; li < localSize(); ++li) {
      if (owes(li)) return false;
    }
    return true;
  };
  if (ready()) return Status::OK();
  Status st = waitUntil(ready, "local peers to finish reading this rank's staging area", true, -1, true,
                        /*doorbell_only=*/true);
  if (st.code() != StatusCode::kTimeout) return st;
  std::string who;
  for (int li = 0; li < localSize(); ++li) {
    if (owes(li)) who += (who.empty() ? "" : ", ") + describeLocal(li);
  }
  return Status(st.code(), st.message() + "; still reading: " + who);
}

std::string HostGroup::describeLocal(int li) const {
  return "rank " + std::to_string(globalRank(li)) + " (host " +
         (options_.host_id.empty() ? "?" : options_.host_id) + ", pid " + std::to_string(header(li)->pid) + ")";
}

Status HostGroup::checkPeersAlive() const {
  for (int li = 0; li < localSize(); ++li) {
    if (li == localRank()) continue;
    const RankHeader* h = header(li);
    const std::string who = describeLocal(li);
    if (h->failed.load(std::memory_order_acquire) != 0) {
      const char* text = h->failure;
      return Status::PeerFailure(who + " stopped: " + std::string(text, strnlen(text, kFailureTextBytes)));
    }
    if (!processAlive(h->pid)) return Status::PeerFailure(who + " has exited");
  }
  return Status::OK();
}

void HostGroup::markFailed(const std::string& why) const {
  RankHeader* h = header(localRank());
  if (h->failed.load(std::memory_order_acquire) != 0) return;
  const size_t n = std::min(why.size(), kFailureTextBytes - 1);
  std::memcpy(h->failure, why.data(), n);
  h->failure[n] = '\0';
  h->failed.store(1, std::memory_order_release);
  for (int li = 0; li < localSize(); ++li) {
    if (li == localRank()) continue;
    std::vector<Bell*> bells;
    for (int c = 0; c < layout().channels; ++c) bells.push_back(&header(li)->bells[c]);
    if (direct(li) != nullptr) bells.push_back(&direct(li)->bell);
    for (Bell* b : bells) {
      b->doorbell.fetch_add(1, std::memory_order_seq_cst);
      futexWake(&b->doorbell);
    }
  }
}

bool HostGroup::spinUntil(const std::function<bool()>& ready, std::chrono::steady_clock::time_point start,
                          int pauses) const {
  using Clock = std::chrono::steady_clock;
  const auto spin_end = start + std::chrono::nanoseconds(static_cast<int64_t>(options_.spin_us * 1e3));
  // Spin briefly, then spin yielding the core: the thread we wait for may be queued behind us on
  // this very core (another rank when the host is oversubscribed, or with a core per rank this
  // rank's own engine or stream thread), and a pure spin would hold it off for the whole spin
  // time (and then a futex round trip) at every sync point. Oversubscribed, yield at once.
  const auto yield_from = start + std::chrono::microseconds(options_.oversubscribed ? 0 : kPureSpinUs);
  // The clock is read (and, past the pure spin, the core yielded) about every 64 pauses, as
  // often as with one poll per 64 pauses: yielding less often held off a peer or this rank's
  // own engine thread queued on this core (2-rank busbw and negotiation steps 15-50 % slower).
  const int polls = std::max(1, 64 / std::max(1, pauses));
  while (true) {
    for (int i = 0; i < polls; ++i) {
      for (int k = 0; k < pauses; ++k) LIGHTCC_CPU_RELAX();
      if (ready()) return true;
    }
    const auto now = Clock::now();
    if (now >= spin_end) return false;
    if (now >= yield_from) sched_yield();
  }
}

Status HostGroup::waitUntil(const std::function<bool()>& ready, const std::string& what,
                            bool check_peers, double max_wait_us, bool spin, bool doorbell_only) const {
  return waitOn(bell(localRank()), ready, what, check_peers, max_wait_us, {spin, doorbell_only, false, kPausesPerPoll});
}

Status HostGroup::waitIdle(const std::function<bool()>& ready, const std::string& what, double max_wait_us,
                           bool doorbell_only) const {
  return waitOn(bell(localRank()), ready, what, /*check_peers=*/false, max_wait_us,
                {/*spin=*/false, doorbell_only, /*idle=*/true, kPausesPerPoll});
}

Status HostGroup::waitDirect(const std::function<bool()>& ready, const std::string& what, double max_wait_us) const {
  return waitOn(&direct(localRank())->bell, ready, what, /*check_peers=*/true, max_wait_us,
                {/*spin=*/true, /*doorbell_only=*/true, /*idle=*/false, kDirectPausesPerPoll});
}

Status HostGroup::waitOn(Bell* me, const std::function<bool()>& ready, const std::string& what, bool check_peers,
                         double max_wait_us, WaitShape shape) const {
  const bool doorbell_only = shape.doorbell_only;
  using Clock = std::chrono::steady_clock;
  if (ready()) return Status::OK();
  const auto start = Clock::now();
  if (shape.spin && spinUntil(ready, start, shape.pauses)) return Status::OK();
  auto last_liveness = start;
  double sleep_us = 20;
  // On a channel with network links (sleeps capped for polling them), a doorbell-only wait has
  // nothing to poll: it sleeps until rung. With 16 emulated hosts of 4 ranks on two cores, the
  // 20 us naps of a rank waiting on its host's leader took the cores from the ranks doing work.
  if (doorbell_only && options_.max_sleep_us < WaitOptions{}.max_sleep_us) sleep_us = WaitOptions{}.max_sleep_us;
  while (true) {
    uint32_t seen = me->doorbell.load(std::memory_order_seq_cst);
    me->sleeping.fetch_add(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (ready()) {
      me->sleeping.fetch_sub(1, std::memory_order_relaxed);
      return Status::OK();
    }
    auto now = Clock::now();
    double waited_us = std::chrono::duration<double, std::micro>(now - start).count();
    if (max_wait_us >= 0 && waited_us >= max_wait_us) {
      me->sleeping.fetch_sub(1, std::memory_order_relaxed);
      return Status::OK();
    }
    // Back off from short sleeps (fast wake for quick peers) to long ones (idle engines).
    double cap = doorbell_only ? std::max(options_.max_sleep_us, WaitOptions{}.max_sleep_us) : options_.max_sleep_us;
    if (shape.idle && waited_us > kIdleFastPollUs) cap = std::max(cap, kIdlePollUs);
    if (interruptCheckInstalled()) cap = std::min(cap, kInterruptPollMs * 1e3);
    if (check_peers) cap = std::min(cap, 100e3);
    if (max_wait_us >= 0) cap = std::min(cap, max_wait_us - waited_us);
    futexWait(&me->doorbell, seen, std::max(1.0, std::min(sleep_us, cap)));
    // Network completions cannot ring the doorbell, so for the first millisecond (a few network
    // round trips) poll at the short interval; only a longer wait backs off toward idle sleeps.
    if (waited_us > 1000) sleep_us = std::min(sleep_us * 2, 100e3);
    me->sleeping.fetch_sub(1, std::memory_order_relaxed);
    if (ready()) return Status::OK();
    if (interruptRequested()) return Status::Cancelled("interrupted while waiting for " + what);
    if (check_peers) {
      if (abort_ != nullptr && abort_->load(std::memory_order_acquire)) {
        return Status::Aborted("gave up waiting for " + what + ": the engine is stopping on an error");
      }
      now = Clock::now();
      if (now - last_liveness > std::chrono::milliseconds(100)) {
        last_liveness = now;
        LIGHTCC_RETURN_IF_ERROR(checkPeersAlive().withContext("while waiting for " + what));
      }
      double secs = std::chrono::duration<double>(now - start).count();
      if (secs > options_.timeout_s) {
        return Status::Timeout("no progress for " + std::to_string(static_cast<int>(secs)) +
                               " s while waiting for " + what + " (LIGHTCC_TIMEOUT=" +
                               std::to_string(options_.timeout_s) + ")");
      }
    }
  }
}

}  // namespace lightcc::shm
