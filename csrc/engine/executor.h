// Executor: runs agreed batches of data collectives on one channel and completes their handles.
//
// DESIGN. One executor per channel: the driving thread's (channel 0) and one per stream worker,
// each used by its channel's one thread. An executor sees only a Batch (the agreed response and
// this rank's entries), its Channel (communicators, links, scratch) and the shared, thread-safe
// ExecEnv; it never reads negotiation state, so it runs the same whether the plan came from the
// cache or the coordinator. pickAlgorithm() decides how a response runs, except a top-k batch's
// dense steps, which pick their own (docs/design.md, "Algorithms").
// Executor is the interface a device (GPU) executor implements too; HostExecutor runs host
// buffers through shared memory and links.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "common/config.h"
#include "engine/batch.h"
#include "engine/channel.h"
#include "engine/stats.h"
#include "engine/timeline.h"
#include "algorithms/collectives.h"
#include "engine/topk_store.h"

namespace lightcc {

class DeviceTopkStore;
class DeviceInflight;

// What the device executors alone need: the GPU data plane's state and settings.
struct DeviceEnv {
  DeviceTopkStore* topk = nullptr;                  // residuals of device tensors
  DeviceInflight* inflight = nullptr;               // LIGHT_DEVICE_INFLIGHT: batches still on the GPU
  std::atomic<uint64_t>* batches = nullptr;         // EngineStats counter
  std::atomic<uint64_t>* front_outputs = nullptr;   // EngineStats counter
  device::AllocCounters allocs;                     // EngineStats counters
  std::string net_plugin;    // NCCL_NET_PLUGIN for lightcc's communicators (HARP unless the user chose)
  std::string nccl_library;  // first libnccl tried
  std::string job_secret;    // what HARP checks
};

// What every executor shares: fixed at init, or safe to use from any thread.
struct ExecEnv {
  const Config* config = nullptr;
  int rank = 0;
  Timeline* timeline = nullptr;
  TopkStore* topk = nullptr;
  int64_t topk_threshold_bytes = 0;  // LIGHT_TOPK_THRESHOLD, or the cost model's
  // Frees a tensor's name; called before its handle completes, since the caller may reuse it at once.
  std::function<void(int32_t set, const std::string& name)> release_name;
  EngineStats* stats = nullptr;  // bytes sent, top-k batches
  DeviceEnv device;              // GPU data plane
};

// Bytes of all of a response's tensors (a fused batch's total).
int64_t responseBytes(const Response& r);
// Does this response take the top-k path (LIGHT_TOPK_ALLREDUCE, Sum or Average, every tensor at
// least the threshold, float32/float16/bfloat16; fused or not, on either executor)?
bool topkEligible(const Response& r, const Config& config, int64_t threshold_bytes);
// How fusion treats a response: 0 dense, 1 top-k (fuses only with top-k ones); -1 (never
// fused) is no longer returned: both executors compress fused batches.
int topkFusionClass(const Response& r, const Config& config, int64_t threshold_bytes);
// The top-k threshold a batch runs with: its own (autotune), else the environment's.
inline int64_t topkThresholdFor(const Batch& b, const ExecEnv& env) {
  return b.topk_threshold >= 0 ? b.topk_threshold : env.topk_threshold_bytes;
}

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one batch, completing the handles it finishes; on error the caller fails the rest.
  virtual Status run(Batch& b) = 0;
  // Completes every handle the batch still holds with `st`.
  virtual void fail(Batch& b, const Status& st) = 0;
  // A peer failed: stop whatever this executor left running on a device (NCCL calls blocked
  // on the dead peer). Called once the engine has stopped using the executor.
  virtual void abort() {}
  // Process set `set` was removed (a fence: none of its work is queued here): free what this
  // executor made for it. Called on the driving thread while the executor is idle.
  virtual void dropSet(int32_t /*set*/) {}
};

// How an allreduce-like response reduces over `members`: Average becomes Sum with the scaling
// folded in (1/members in postscale for floats, an exact division for integers); bool
// reductions become max (or) / min (and).
ReduceSpec reduceSpecFor(const Response& r, int members);
ReduceSpec reduceSpecFor(DataType dtype, ReduceOp op, double prescale, double postscale, int members);

// Elements per row: the product of the dims after the first (allgather, alltoall, reducescatter).
int64_t rowElements(const std::vector<int64_t>& shape);
// Position of global `rank` among the set's members, -1 if absent.
int memberIndex(const SetComm& c, int rank);
// Completes entry `index` of a batch: frees its name first (the caller may reuse it at once),
// then the handle. Entries already completed are skipped.
void completeEntry(const ExecEnv& env, Batch& b, size_t index, const Status& st, HandleResult result = {});

// How a response runs; pickAlgorithm() below decides, for both executors (the device executor
// runs the allreduce rows on its device communicators); top-k's dense steps are the exception.
enum class Algorithm {
  kSelf,          // a one-member set: a local copy (and scaling)
  kSharedMemory,  // every member on this host
  kLinks,         // ring/chain/direct over links (members on several hosts, or LIGHTCC_FORCE_RING)
  kRecursiveDoubling,  // an allreduce over links of at most LIGHTCC_RD_ALLREDUCE_BYTES: log2(p)
                       // rounds instead of the ring's 2(p-1) (the device executor runs it flat)
  kLeaderDoubling,  // the same sizes over a set with several members on a host (LIGHTCC_RD_LEADERS):
                    // shared memory in each host, recursive doubling among the hosts' leaders
  kTwoLevel,      // LIGHT_2D_ALLREDUCE: in the group first, then across groups
  kTopk,          // LIGHT_TOPK_ALLREDUCE over the flat set
  kTwoLevelTopk,  // top-k across groups, dense inside them
  kAdasum,        // op=Adasum: adaptive summation (flat, or two-level with LIGHT_2D_ALLREDUCE)
};
// What pickAlgorithm() needs to know of the response's set on the executor's channel.
struct SetShape {
  int members = 1;
  bool all_local = false;  // every member on this host
  bool two_level = false;  // the set has 2D communicators (groups on one host each, 2+ groups)
  bool leaders = false;    // the set has host-leader communicators (LeaderComm)
};
Algorithm pickAlgorithm(const Batch& b, const ExecEnv& env, const SetShape& set);

class HostExecutor : public Executor {
 public:
  HostExecutor(const ExecEnv& env, Channel& channel) : env_(env), channel_(channel) {}

  Status run(Batch& b) override;
  void fail(Batch& b, const Status& st) override;

 private:
  void complete(Batch& b, size_t index, const Status& st, HandleResult result = {});
  // Bytes this channel has posted on the links of the set (and of its 2D communicators).
  uint64_t sentBytes(const SetComm& comm, int32_t set) const;
  friend struct OpRuns;  // engine/op_runs.h: which of the bodies below runs each op
  // Runs `b` with its op's body; defined beside the table, in engine/op_runs.cc.
  Status runOp(Batch& b, SetComm& comm, Algorithm algo);
  Status allreduce(Batch& b, SetComm& comm, Algorithm algo);
  Status topk(Batch& b, SetComm& comm, Algorithm algo);
  Status allgather(Batch& b, SetComm& comm, Algorithm algo);
  Status broadcast(Batch& b, SetComm& comm, Algorithm algo);
  Status alltoall(Batch& b, SetComm& comm, Algorithm algo);
  Status reducescatter(Batch& b, SetComm& comm, Algorithm algo);

  const ExecEnv& env_;
  Channel& channel_;
};

}  // namespace lightcc
