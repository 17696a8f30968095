// ExecutorPool: building the executors and streams, routing batches to them, their end, residuals for checkpoints.
#include "engine/executor_pool.h"

#include "algorithms/topk_schedule.h"

namespace lightcc {

ExecutorPool::~ExecutorPool() { streams_.reset(); }

Status ExecutorPool::start(Mesh& mesh, int rank, int64_t topk_threshold,
                           std::function<void(int32_t set, const std::string& name)> release_name) {
  env_.config = &config_;
  env_.rank = rank;
  env_.timeline = &timeline_;
  env_.topk = &topk_;
  env_.topk_threshold_bytes = topk_threshold;
  env_.release_name = std::move(release_name);
  env_.device.topk = &device_topk_;
  env_.device.batches = &stats_.batches.device_batches;
  env_.stats = &stats_;
  env_.device.front_outputs = &stats_.device_memory.device_front_outputs;
  DeviceMemoryStats& memory = stats_.device_memory;
  env_.device.allocs = device::AllocCounters{&memory.device_allocs, &memory.device_alloc_bytes};
  env_.device.inflight = &device_inflight_;
  env_.device.net_plugin = config_.links.net_plugin.empty() ? options_.bundled_net_plugin : config_.links.net_plugin;
  env_.device.nccl_library = config_.device.nccl_library.empty() ? options_.nccl_library : config_.device.nccl_library;
  env_.device.job_secret = options_.secret;
  main_ = std::make_unique<RoutingExecutor>(env_, mesh.channel(0));
  if (mesh.channels() == 1) return Status::OK();
  // LIGHT_NUM_STREAMS > 1: every further channel gets a worker with its own executor.
  std::vector<Channel*> channels;
  std::vector<std::unique_ptr<Executor>> executors;
  for (int c = 1; c < mesh.channels(); ++c) {
    channels.push_back(&mesh.channel(c));
    executors.push_back(std::make_unique<RoutingExecutor>(env_, mesh.channel(c)));
    stream_executors_.push_back(executors.back().get());
  }
  streams_ = std::make_unique<Streams>(std::move(channels), std::move(executors), mesh.channel(0).host.get(),
                                       Streams::Counters{&stats_.batches.stream_batches, &stats_.batches.streams_busy_max});
  streams_->start();
  return Status::OK();
}

Status ExecutorPool::run(Batch b, uint64_t seq, int active) {
  if (streams_) {
    // Autotune may use fewer streams than were built; it changes at a cycle boundary on every rank.
    streams_->submit(static_cast<int>(seq % static_cast<uint64_t>(active)), std::move(b));
    return Status::OK();
  }
  Status st = main_->run(b);
  if (!st.ok()) main_->fail(b, st);
  return st;
}

void ExecutorPool::dropSet(int32_t set) {
  // Device communicators (built over the set's host ones) and residuals go first; streams are
  // idle at a fence.
  main_->dropSet(set);
  for (Executor* e : stream_executors_) e->dropSet(set);
  device_topk_.dropSet(set);
}

void ExecutorPool::abortStreams(const Status& why) {
  if (streams_) streams_->abort(why);
}

Status ExecutorPool::stop(const Status& why) {
  // Agreed batches still queued on streams run to completion on every rank (all stop in the same
  // cycle); after an error they are failed instead.
  Status st = why;
  if (streams_) {
    streams_->stop(why);
    if (st.ok() && streams_->failed()) st = streams_->error();
  }
  return st;
}

void ExecutorPool::abortDevices() {
  if (main_) main_->abort();
  for (Executor* e : stream_executors_) e->abort();
}

bool ExecutorPool::deviceReady() {
  return config_.device.inflight <= 0 || device_inflight_.running() < static_cast<size_t>(config_.device.inflight);
}

Status ExecutorPool::topkResiduals(std::map<std::string, std::vector<float>>* out) {
  *out = topk_.residuals();
  for (auto it = out->begin(); it != out->end();) {  // taken over by a GPU tensor: moved to the device
    it = it->second.empty() ? out->erase(it) : std::next(it);
  }
  return device_topk_.residuals(out);
}

Status ExecutorPool::setTopkResidual(const std::string& name, const float* data, size_t count) {
  bool on_device = false;
  LIGHTCC_RETURN_IF_ERROR(device_topk_.setResidual(name, data, count, topkRestoredSteps(config_), &on_device));
  return on_device ? Status::OK() : topk_.setResidual(name, data, count);
}

}  // namespace lightcc
