// Driver's side of Progress: set-up, what a cycle needs, sleeping for work, timers, ending, interrupts.
//
// Progress (progress.h) decides who drives; this file is what driving means for the engine:
// whether there is a cycle to run, how long to sleep without one, the timers (stall inspector,
// peer liveness, an abort request), and how the engine ends (every handle failed, host peers
// told when the end is an error).
#include <pthread.h>
#include <sched.h>

#include <algorithm>

#include "common/interrupt.h"
#include "common/logging.h"
#include "engine/driver.h"
#include "transport/net/peer_probe.h"

namespace lightcc {
namespace {
double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
// How long a driving caller with nothing to do sleeps before it looks at the timers again; it
// runs them itself, since it may keep the engine for a long time.
constexpr double kCallerIdleUs = 20e3;
// How often peers' liveness is checked while waiting for work: often while something here waits
// on them, rarely when idle (a dead peer then fails the next operation soon enough).
constexpr double kLivenessPendingS = 0.25, kLivenessIdleS = 1.0;
// How often the engine looks at the GPU while tensors wait for it to drain (device_pacing.h).
constexpr double kPacingPollUs = 100;
// How long tensors may wait on peers before this rank starts a cycle itself (see timers): a
// tenth of LIGHTCC_TIMEOUT, at most a second.
double heartbeatSeconds(double timeout_s) { return std::min(1.0, timeout_s / 10); }

// A waiter's signal (Ctrl-C): abort the engine, then wait for the op's buffers. The engine may
// still be reading or writing them; they belong to the caller again only once the handle
// completes, which the abort makes happen within a wait's poll.
Status abortForSignal(Driver& driver, int rank, Handle& handle) {
  const Status why =
      Status::Cancelled("rank " + std::to_string(rank) + " was interrupted (a signal) while waiting for an operation");
  driver.requestAbort(why);
  Status ignored = handle.wait();
  (void)ignored;
  return why;
}
}  // namespace

Driver::Driver(const Shared& shared)
    : s_(shared),
      tuning_(shared.config),
      fusion_(shared.config, tuning_, pool_, shared.stats),
      tune_(tuning_, fusion_, pool_, shared.topo),
      progress_(*this, &shared.stats.cycle.caller_cycles, &shared.stats.cycle.handoff_waits),
      pool_(shared.config, shared.options, shared.timeline, shared.stats) {}

Driver::~Driver() = default;

Status Driver::bootstrap() {
  LIGHTCC_RETURN_IF_ERROR(Mesh::build(s_.options, s_.config, s_.life.abortFlag(), &mesh_));
  s_.topo = mesh_->topology();
  Channel& main = mesh_->channel(0);
  s_.stats.traffic.net_links = static_cast<uint64_t>(mesh_->netLinks());
  s_.stats.traffic.shm_links = static_cast<uint64_t>(mesh_->shmLinks());
  host_ = main.host.get();
  for (const auto& [id, ranks] : s_.sets.init(s_.topo.size, s_.options.process_sets)) mesh_->addSet(id, ranks);
  negotiator_ = std::make_unique<Negotiator>(s_.config, s_.topo, main, s_.queue, s_.timeline, s_.stats);
  dispatch_ = std::make_unique<Dispatcher>(*negotiator_, pool_, *mesh_, s_.sets, tuning_);
  cycle_ = std::make_unique<CycleRunner>(CycleRunner::Parts{s_.config, s_.life, s_.queue, s_.timeline, s_.stats,
                                                            *negotiator_, *dispatch_, tuning_, fusion_, tune_, pool_});
  auto hier = main.hier.find(0);
  const int two_d_group = hier != main.hier.end() ? hier->second.intra.size() : 0;
  // May probe the links: before the cycle receives are posted.
  LIGHTCC_RETURN_IF_ERROR(tuning_.probe(main.comms.at(0), mesh_->hosts(), s_.topo, two_d_group));
  LIGHTCC_RETURN_IF_ERROR(pool_.start(*mesh_, s_.topo.rank, tuning_.initialTopkThreshold(),
                                      [q = &s_.queue](int32_t set, const std::string& name) { q->finish(set, name); }));
  LIGHTCC_RETURN_IF_ERROR(tuning_.start(s_.topo.rank, pool_.streams()));
  fusion_.start(*negotiator_, host_);
  return negotiator_->start();
}

void Driver::poke() {
  // The background thread may be asleep, or sitting out a caller's grace period.
  if (host_) progress_.poke();
}

void Driver::requestAbort(const Status& why) {
  s_.life.requestAbort(why);
  pool_.abortStreams(why);
  progress_.poke();
}

Status Driver::checkLiveness() {
  if (s_.life.aborting()) return s_.life.abortStatus();
  const bool pending = negotiator_->anyWork();
  if (secondsSince(last_liveness_) < (pending ? kLivenessPendingS : kLivenessIdleS)) return Status::OK();
  last_liveness_ = std::chrono::steady_clock::now();
  return host_->checkPeersAlive();
}

bool Driver::workReady(bool background) {
  if (s_.life.stopUnseen()) return true;
  // The background thread leaves a synchronous caller's entries to that caller: taking them
  // would turn every later op into a hand-off, since the caller then finds the engine busy.
  if (background ? s_.queue.hasUndrivenWork() : s_.queue.hasWork()) return true;
  if (pool_.failed()) return true;
  if (fusion_.wantsFlush() || fusion_.wantsCycle()) return true;
  return negotiator_->incoming();
}

bool Driver::urgent() { return s_.life.stopUnseen() || s_.life.aborting() || pool_.failed(); }

bool Driver::asyncWork() { return s_.queue.hasUndrivenWork(); }

Status Driver::timers(bool* want_cycle) {
  LIGHTCC_RETURN_IF_ERROR(checkLiveness());
  // Tensors that wait on peers move only in a cycle some rank starts. If the ranks that would
  // start it are cut off, no wait is running here to time out on them: the loss went unseen until
  // the stall inspector renegotiated, 30 s later (never with it off). So start an empty cycle
  // now and then while waiting: one tree exchange, which live peers join at once and a lost one
  // fails within LIGHTCC_TIMEOUT.
  if (negotiator_->anyWork() && secondsSince(cycle_->lastEnd()) > heartbeatSeconds(s_.config.timeout_seconds)) {
    *want_cycle = true;
  }
  const bool winding_down = s_.life.windingDown();
  if (secondsSince(last_maintenance_) < (winding_down ? 0.1 : 1.0)) return Status::OK();
  bool timer = false;
  last_maintenance_ = std::chrono::steady_clock::now();
  negotiator_->maintenance(last_maintenance_, &timer);
  *want_cycle = *want_cycle || timer || winding_down;
  return Status::OK();
}

double Driver::idleUs(bool background) {
  const bool holding = fusion_.holding();  // held bucket tensors: the flush timer
  // Tensors held for a busy GPU: its stream idles from the moment it drains until we look.
  if (fusion_.paced()) return kPacingPollUs;
  if (!background) return holding ? 1e3 : kCallerIdleUs;
  // With nothing pending the engine sleeps until woken (liveness still looks now and then); with
  // pending work it looks often; while some rank shuts down, every 100 ms so its grace can end.
  double us = negotiator_->anyWork() ? kLivenessPendingS * 1e6 : kLivenessIdleS * 1e6;
  if (s_.life.windingDown()) us = 100e3;
  return holding ? std::min(us, 1e3) : us;
}

Status Driver::sleep(const std::function<bool()>& ready, double max_us, bool spin) {
  // The engine thread with nothing pending (between steps): poll the network slowly once idle a while.
  if (!spin && !workLeft()) return host_->waitIdle(ready, "work", max_us, negotiator_->hearsOnlyHost());
  return host_->waitUntil(ready, "work", false, max_us, spin, negotiator_->hearsOnlyHost());
}

bool Driver::workLeft() { return negotiator_->anyWork() || s_.queue.hasWork(); }

void Driver::wake() { host_->wakeSelf(); }

Status Driver::run(bool background, bool* stop) {
  // HOROVOD_CYCLE_TIME: while work keeps arriving, let more of it gather before negotiating.
  const double cycle_time_ms = tuning_.live().params.cycle_time_ms;
  if (background && cycle_->busy() && cycle_time_ms > 0 && !negotiator_->incoming()) {
    auto due = cycle_->lastEnd() + std::chrono::microseconds(static_cast<int64_t>(cycle_time_ms * 1e3));
    double left_us = std::chrono::duration<double, std::micro>(due - std::chrono::steady_clock::now()).count();
    if (left_us > 0) {
      LIGHTCC_RETURN_IF_ERROR(host_->waitUntil(
          [&] { return s_.life.stopAsked() || negotiator_->incoming(); }, "cycle time", false, left_us));
    }
  }
  if (pool_.failed()) return pool_.error();
  return cycle_->run(stop);
}

void Driver::end(const Status& why) {
  Status st = why;
  if (s_.life.aborting()) {
    // Waits cut short by the abort report it vaguely; the reason it was asked for is the news.
    st = s_.life.abortStatus();
  } else if (st.code() == StatusCode::kCancelled) {
    st = Status::Cancelled("rank " + std::to_string(s_.topo.rank) + " was " + st.message() + " (a signal)");
  }
  st = pool_.stop(st);
  if (st.ok()) {
    s_.life.ended(st);
    st = Status::Aborted("lightcc was shut down before this operation completed");
  } else {
    // The peer we waited on may only be stuck behind the lost one: say which remote ranks
    // still answer (a no-op when the data path's error already says). Not after an abort: its
    // reason is the news, and probing a cut-off host would hold up the recovery by its budget.
    if (mesh_ != nullptr && !s_.life.aborting()) {
      const Channel& main = mesh_->channel(0);
      const auto targets = main.dialer ? main.dialer->peerTargets() : net::linkTargets(main.world_links);
      st = net::withPeerCheck(st, targets, peerCheckSeconds(s_.config));
    }
    LIGHTCC_LOG(kError) << st.message();
    s_.life.ended(st);
    // This process may live on (a caught KeyboardInterrupt): host peers must not wait for it.
    host_->markFailed(st.message());
    pool_.abortDevices();
  }
  negotiator_->failAll(st);
  s_.timeline.stop();
}

void Driver::loop() {
  if (!s_.config.placement.thread_affinity.empty()) {
    int core = s_.config.placement.thread_affinity[s_.topo.local_rank % s_.config.placement.thread_affinity.size()];
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
      LIGHTCC_LOG(kWarning) << "HOROVOD_THREAD_AFFINITY: cannot pin the engine thread to core " << core;
    }
  }
  progress_.runBackground();
}

Status Driver::wait(Handle& handle) {
  if (pool_.hasStreams()) {
    // With streams the work runs on their workers and completes handles there; a driver would
    // only negotiate, which the engine thread already does without a hand-off on the data path.
    while (!handle.waitFor(kInterruptPollMs * 1e3)) {
      if (interruptRequested()) return abortForSignal(*this, s_.topo.rank, handle);
    }
    return handle.wait();
  }
  Status st = progress_.wait(handle);
  if (st.code() == StatusCode::kCancelled && !handle.done()) return abortForSignal(*this, s_.topo.rank, handle);
  return handle.wait();
}

}  // namespace lightcc
