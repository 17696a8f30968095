// ExecutorPool: every executor of the engine — channel 0's, the stream workers' — and the state they share.
//
// DESIGN. Owned by the driver (driver.h); its methods run on the driving thread unless said
// otherwise. It owns what the executors share through ExecEnv: the top-k residual stores (host
// and device), the GPU in-flight count (device_pacing.h), and the counters. Without streams a
// batch runs here at once on channel 0; with LIGHT_NUM_STREAMS > 1 it goes to the stream worker
// its sequence number names (streams.h), which runs it on its own channel and executor.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/device_executor.h"
#include "engine/device_pacing.h"
#include "engine/executor.h"
#include "engine/mesh.h"
#include "engine/stats.h"
#include "engine/streams.h"
#include "engine/topk_store.h"

namespace lightcc {

class ExecutorPool {
 public:
  ExecutorPool(const Config& config, const InitOptions& options, Timeline& timeline, EngineStats& stats)
      : config_(config), options_(options), timeline_(timeline), stats_(stats), topk_(config) {}
  ~ExecutorPool();  // stream workers stop before the executors and stores they use go

  // Channel 0's executor, and a worker per further channel of the mesh (started here).
  // `release_name` frees a tensor's name before its handle completes.
  Status start(Mesh& mesh, int rank, int64_t topk_threshold,
               std::function<void(int32_t set, const std::string& name)> release_name);
  int streams() const { return streams_ ? streams_->size() : 1; }
  bool hasStreams() const { return streams_ != nullptr; }

  // Every rank numbers every agreed response, member or not, so batches map to the same stream.
  uint64_t nextSequence() { return streams_ ? streams_->nextSequence() : 0; }
  // Runs `b` now (no streams) or on stream `seq` mod `active`. An error here fails the batch.
  Status run(Batch b, uint64_t seq, int active);
  Status drain() { return streams_ ? streams_->drain() : Status::OK(); }  // a fence
  void dropSet(int32_t set);  // a removed set: its device communicators and residuals
  // A stream failed: the error to end with (any thread may read failed()).
  bool failed() const { return streams_ && streams_->failed(); }
  Status error() const { return streams_ ? streams_->error() : Status::OK(); }
  // Any thread: in-flight stream waits give up with `why`.
  void abortStreams(const Status& why);
  // The end: streams run what is queued (OK) or fail it. Returns `why`, or the error a stream
  // hit when `why` was OK.
  Status stop(const Status& why);
  // After an error: device calls blocked on a dead peer (NCCL) are stopped.
  void abortDevices();
  // Fewer than LIGHT_DEVICE_INFLIGHT GPU batches running here.
  bool deviceReady();

  // Any thread: top-k residuals by name for checkpoints (as Engine::topkResiduals says).
  Status topkResiduals(std::map<std::string, std::vector<float>>* out);
  Status setTopkResidual(const std::string& name, const float* data, size_t count);
  // Any thread: what fronts declare per tensor, and read back after a step (host tensors).
  TopkStore& topkStore() { return topk_; }

 private:
  const Config& config_;
  const InitOptions& options_;
  Timeline& timeline_;
  EngineStats& stats_;
  TopkStore topk_;
  DeviceTopkStore device_topk_;
  DeviceInflight device_inflight_;  // used by executors on stream threads too
  ExecEnv env_;
  std::unique_ptr<RoutingExecutor> main_;     // runs batches on channel 0 (without streams)
  std::vector<Executor*> stream_executors_;   // owned by streams_
  std::unique_ptr<Streams> streams_;          // last: its workers stop before anything they use goes
};

}  // namespace lightcc
