// DeviceExecutor: GPU batches on its own stream — layout, residuals, completion — over csrc/algorithms' device schedules; and the routing.
#include "engine/device_executor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "algorithms/collectives.h"
#include "algorithms/device_allreduce.h"
#include "algorithms/device_topk.h"
#include "algorithms/topk_schedule.h"
#include "common/logging.h"
#include "device/cuda_device.h"
#include "device/host_device.h"
#include "device/nccl.h"
#include "engine/cost_model.h"
#include "engine/device_pacing.h"
#include "engine/fusion.h"
#include "kernels/topk.h"

namespace lightcc {
namespace {

size_t roundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }

// Both sides of NCCL: only the variables the user left alone are set, before NCCL's first init.
void pointNcclAtPlugin(const ExecEnv& env) {
  static std::once_flag once;
  std::call_once(once, [&env] {
    if (!env.net_plugin.empty()) setenv("NCCL_NET_PLUGIN", env.net_plugin.c_str(), 0);
    if (!env.job_secret.empty()) setenv("HARP_JOB_SECRET", env.job_secret.c_str(), 0);
    // NCCL gives one network peer two channels; HARP spreads each channel's flows over its
    // instances, and with four channels it moved twice the bytes on the H100 bench
    // (benchmarks/gpu/results). NCCL reads this once per process, at its first communicator.
    const std::string harp = "libnccl-net-harp.so";
    const std::string& p = env.net_plugin;
    if (p.size() >= harp.size() && p.compare(p.size() - harp.size(), harp.size(), harp) == 0) {
      setenv("NCCL_MIN_NCHANNELS", "4", 0);
    }
  });
}

}  // namespace

DeviceTopkStore::Entry& DeviceTopkStore::entry(int32_t set, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& e = entries_[{set, name}];
  if (!e) e = std::make_unique<Entry>();
  return *e;
}

void DeviceTopkStore::dropSet(int32_t set) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    it = it->first.first == set ? entries_.erase(it) : std::next(it);
  }
}

void DeviceTopkStore::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
}

namespace {
std::string residualName(const std::pair<int32_t, std::string>& key) {
  return key.first == 0 ? key.second : std::to_string(key.first) + ":" + key.second;
}
}  // namespace

Status DeviceTopkStore::residuals(std::map<std::string, std::vector<float>>* out) {
  std::vector<std::pair<std::string, Entry*>> entries;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, e] : entries_) entries.emplace_back(residualName(key), e.get());
  }
  for (auto& [name, e] : entries) {
    std::lock_guard<std::mutex> lock(e->mu);
    if (!e->residual) continue;
    if (e->last) LIGHTCC_RETURN_IF_ERROR(e->last->synchronize());
    std::vector<float> values(e->elements);
    LIGHTCC_RETURN_IF_ERROR(e->residual->download(values.data(), values.size() * sizeof(float))
                                .withContext("reading the top-k residual of '" + name + "'"));
    (*out)[name] = std::move(values);
    if (e->velocity) {  // momentum correction's velocity, named as the host store names it
      std::vector<float> velocity(e->elements);
      LIGHTCC_RETURN_IF_ERROR(e->velocity->download(velocity.data(), velocity.size() * sizeof(float))
                                  .withContext("reading the top-k velocity of '" + name + "'"));
      (*out)[TopkStore::kVelocityPrefix + name] = std::move(velocity);
    }
  }
  return Status::OK();
}

Status DeviceTopkStore::setResidual(const std::string& name, const float* data, size_t count, uint64_t warmup_steps,
                                    bool* found) {
  *found = false;
  const std::string prefix = TopkStore::kVelocityPrefix;
  const bool velocity = name.compare(0, prefix.size(), prefix) == 0;
  const std::string tensor = velocity ? name.substr(prefix.size()) : name;
  Entry* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, entry] : entries_) {
      if (residualName(key) == tensor) e = entry.get();
    }
  }
  if (e == nullptr) return Status::OK();
  std::lock_guard<std::mutex> lock(e->mu);
  device::BufferPtr& target = velocity ? e->velocity : e->residual;
  if (!target) return Status::OK();  // a velocity not made yet waits in the host store
  *found = true;
  if (count != e->elements) {
    return Status::InvalidArgument("top-k residual for '" + name + "' has " + std::to_string(e->elements) +
                                   " elements, not " + std::to_string(count));
  }
  if (e->last) LIGHTCC_RETURN_IF_ERROR(e->last->synchronize());
  std::vector<float> padded(e->count, 0.0f);
  std::copy(data, data + count, padded.begin());
  LIGHTCC_RETURN_IF_ERROR(target->upload(padded.data(), padded.size() * sizeof(float)));
  if (!velocity) e->steps = std::max(e->steps, warmup_steps);
  return Status::OK();
}

DeviceExecutor::~DeviceExecutor() {
  // Communicators before the device: destroying one waits for its stream's work.
  comms_.clear();
}

void DeviceExecutor::abort() {
  for (auto& [id, c] : comms_) {
    for (auto* comm : {c.flat.get(), c.intra.get(), c.cross.get()}) {
      if (comm != nullptr) comm->abort();
    }
  }
}

void DeviceExecutor::dropSet(int32_t set) {
  // Destroying a communicator waits for its work on the stream, so the set's last batches
  // finish first; a later set that reuses the ranks gets communicators of its own.
  comms_.erase(set);
}

void DeviceExecutor::complete(Batch& b, size_t index, const Status& st, HandleResult result) {
  completeEntry(env_, b, index, st, std::move(result));
}

void DeviceExecutor::fail(Batch& b, const Status& st) {
  for (size_t i = 0; i < b.entries.size(); ++i) complete(b, i, st);
}

Status DeviceExecutor::finish(Batch& b, std::vector<HandleResult> results) {
  device::EventPtr done;
  LIGHTCC_RETURN_IF_ERROR(dev_->record(&done));
  if (env_.device_inflight) env_.device_inflight->add(done);
  results.resize(b.entries.size());
  for (size_t i = 0; i < b.entries.size(); ++i) {
    results[i].done = done;
    complete(b, i, Status::OK(), std::move(results[i]));
  }
  return Status::OK();
}

Status DeviceExecutor::grow(device::BufferPtr* buf, size_t bytes) { return device::grow(*dev_, buf, bytes); }

Status DeviceExecutor::ready(const Batch& b) {
  int ordinal = -1;
  for (size_t i = 0; i < b.entries.size(); ++i) {
    if (const TensorEntry* e = b.entry(i)) {
      ordinal = e->request.device;
      break;
    }
  }
  if (!dev_) {
    if (backend_ == Backend::kHost) {
      dev_ = std::make_unique<device::HostDevice>();
    } else {
      if (ordinal < 0) ordinal = 0;  // a joined rank with nothing of its own: its first GPU
      std::unique_ptr<device::CudaDevice> cuda;
      LIGHTCC_RETURN_IF_ERROR(device::CudaDevice::create(ordinal, &cuda)
                                  .withContext("rank " + std::to_string(env_.rank) + ", GPU " +
                                               std::to_string(ordinal)));
      dev_ = std::move(cuda);
    }
    dev_->countInto(env_.device_allocs);
  } else if (backend_ == Backend::kCuda) {
    if (ordinal >= 0 && ordinal != dev_->ordinal()) {
      return Status::InvalidArgument("rank " + std::to_string(env_.rank) + " passed tensor '" +
                                     b.response->names.front() + "' on cuda:" + std::to_string(ordinal) +
                                     " but its earlier GPU tensors were on " + dev_->describe() +
                                     "; lightcc drives one GPU per rank");
    }
    // The driving thread may be another one than last time: CUDA's current device is per thread.
    LIGHTCC_RETURN_IF_ERROR(static_cast<device::CudaDevice&>(*dev_).activate());
  }
  const device::Event* waited = nullptr;  // a submission's tensors share one event
  for (size_t i = 0; i < b.entries.size(); ++i) {
    if (const TensorEntry* e = b.entry(i); e != nullptr && e->ready && e->ready.get() != waited) {
      LIGHTCC_RETURN_IF_ERROR(dev_->waitFor(e->ready));
      waited = e->ready.get();
    }
  }
  return Status::OK();
}

Status DeviceExecutor::makeCudaComms(int32_t set, SetComms* c) {
  std::string why;
  const device::NcclLibrary* nccl = device::NcclLibrary::get(env_.nccl_library, &why);
  if (nccl == nullptr) return Status::PreconditionFailed("GPU tensors: " + why);
  pointNcclAtPlugin(env_);
  SetComm& hc = channel_.comms.at(set);
  const std::string what = "process set " + std::to_string(set) + " (rank " + std::to_string(env_.rank) +
                           ", channel " + std::to_string(channel_.index) + ")";
  device::NcclUniqueId id{};
  if (hc.me == 0) LIGHTCC_RETURN_IF_ERROR(nccl->uniqueId(&id));
  // The id travels over the set's own communicator: its peers proved the job secret already.
  device::HostComm bootstrap(hc);
  LIGHTCC_RETURN_IF_ERROR(bootstrap.broadcast(&id, sizeof id, 0).withContext("sending the NCCL id of " + what));
  void* stream = static_cast<device::CudaDevice&>(*dev_).stream();
  std::unique_ptr<device::NcclComm> flat;
  LIGHTCC_RETURN_IF_ERROR(device::NcclComm::create(nccl, id, hc.size(), hc.me, stream, what, &flat));
  auto hier = channel_.hier.find(set);
  if (hier != channel_.hier.end() && hier->second.cross.size() > 1) {
    const int g = hier->second.intra.size();
    const int pos = hc.me;
    std::unique_ptr<device::NcclComm> intra, cross;
    LIGHTCC_RETURN_IF_ERROR(flat->split(pos / g, pos % g, g, "the 2D group of " + what, &intra));
    LIGHTCC_RETURN_IF_ERROR(flat->split(pos % g, pos / g, hier->second.cross.size(), "the 2D cross of " + what, &cross));
    c->intra = std::move(intra);
    c->cross = std::move(cross);
  }
  c->flat = std::move(flat);
  return Status::OK();
}

Status DeviceExecutor::commsFor(int32_t set, SetComms** out) {
  auto it = comms_.find(set);
  if (it == comms_.end()) {
    auto hc = channel_.comms.find(set);
    if (hc == channel_.comms.end() || !hc->second.member()) {
      return Status::Internal("rank " + std::to_string(env_.rank) + " has no communicator for process set " +
                              std::to_string(set));
    }
    SetComms c;
    if (backend_ == Backend::kHost) {
      c.flat = std::make_unique<device::HostComm>(hc->second);
      auto hier = channel_.hier.find(set);
      if (hier != channel_.hier.end() && hier->second.cross.size() > 1) {
        c.intra = std::make_unique<device::HostComm>(hier->second.intra);
        c.cross = std::make_unique<device::HostComm>(hier->second.cross);
      }
    } else {
      LIGHTCC_RETURN_IF_ERROR(makeCudaComms(set, &c));
    }
    it = comms_.emplace(set, std::move(c)).first;
  }
  *out = &it->second;
  return Status::OK();
}

Status DeviceExecutor::run(Batch& b) {
  const Response& r = *b.response;
  if (env_.device_batches != nullptr) env_.device_batches->fetch_add(1, std::memory_order_relaxed);
  LIGHTCC_RETURN_IF_ERROR(ready(b));
  SetComms* c = nullptr;
  LIGHTCC_RETURN_IF_ERROR(commsFor(r.process_set_id, &c));
  const bool trace = env_.rank == 0 && env_.timeline->active();
  if (trace) {
    for (const auto& n : r.names) env_.timeline->begin(n, opTypeName(r.op));
  }
  Status st;
  switch (r.op) {
    case OpType::kAllreduce: {
      const Algorithm algo = pickAlgorithm(b, env_, SetShape{c->flat->size(), false, c->intra != nullptr});
      st = algo == Algorithm::kTopk || algo == Algorithm::kTwoLevelTopk ? topk(b, *c, algo) : allreduce(b, *c, algo);
      break;
    }
    case OpType::kAllgather: st = allgather(b, *c); break;
    case OpType::kBroadcast: st = broadcast(b, *c); break;
    case OpType::kAlltoall: st = alltoall(b, *c); break;
    case OpType::kReducescatter: st = reducescatter(b, *c); break;
    case OpType::kBarrier:
    case OpType::kJoin:
    case OpType::kAddProcessSet:
    case OpType::kRemoveProcessSet:  // control ops: dispatch applies them, never an executor
      st = Status::Internal(std::string("cannot execute ") + opTypeName(r.op) + " on " + dev_->describe());
      break;
  }
  if (trace) {
    for (const auto& n : r.names) env_.timeline->end(n);
  }
  if (st.ok()) {
    // NCCL may have noticed a broken peer by itself (HARP reset the link): say so now.
    for (auto* comm : {c->flat.get(), c->intra.get(), c->cross.get()}) {
      if (comm != nullptr && st.ok()) st = comm->asyncError();
    }
  }
  return st;
}

Status DeviceExecutor::allreduce(Batch& b, SetComms& c, Algorithm algo) {
  const Response& r = *b.response;
  if (algo == Algorithm::kAdasum) {
    return Status::InvalidArgument("Adasum of GPU tensors is not supported yet (tensor '" + r.names.front() +
                                   "'); use op=Average or Sum, or pass CPU tensors");
  }
  const size_t esize = dtypeSize(r.dtype);
  const bool two_level = algo == Algorithm::kTwoLevel || algo == Algorithm::kTwoLevelTopk;
  const ReduceSpec spec = reduceSpecFor(r, c.flat->size());
  // One tensor reduces in its output; several (or 2D's padding) go through the fusion buffer.
  std::vector<device::Segment> in_segs, out_segs;
  size_t total = 0;
  for (size_t i = 0; i < r.names.size(); ++i) {
    const size_t bytes = static_cast<size_t>(tensorBytes(r, i));
    const TensorEntry* e = b.entry(i);
    if (e == nullptr && !b.joined) {
      return Status::Internal("rank " + std::to_string(env_.rank) + " has no tensor '" + r.names[i] +
                              "' for an agreed allreduce");
    }
    in_segs.push_back({e ? const_cast<void*>(e->input) : nullptr, total, bytes});
    out_segs.push_back({e ? e->output : nullptr, total, bytes});
    total += bytes;
  }
  const size_t count = total / esize;
  const size_t g = two_level ? static_cast<size_t>(c.intra->size()) : 1;
  const size_t padded = roundUp(std::max<size_t>(count, 1), g);
  char* buf;
  const bool direct = r.names.size() == 1 && !two_level && out_segs[0].ptr != nullptr;
  if (direct) {
    buf = static_cast<char*>(out_segs[0].ptr);
    LIGHTCC_RETURN_IF_ERROR(dev_->copy(buf, in_segs[0].ptr, total));
  } else {
    LIGHTCC_RETURN_IF_ERROR(grow(&fusion_, padded * esize));
    buf = static_cast<char*>(fusion_->data());
    LIGHTCC_RETURN_IF_ERROR(dev_->pack(buf, in_segs));
    if (padded > count) LIGHTCC_RETURN_IF_ERROR(dev_->zero(buf + total, (padded - count) * esize));
  }
  if (spec.prescale != 1.0) LIGHTCC_RETURN_IF_ERROR(dev_->scale(buf, buf, count, r.dtype, spec.prescale));
  const std::string what = "allreduce of '" + r.names.front() + "'";
  if (two_level) {
    LIGHTCC_RETURN_IF_ERROR(grow(&shard_, padded / g * esize));
    LIGHTCC_RETURN_IF_ERROR(deviceTwoLevelAllreduce(*c.intra, *c.cross, buf, shard_->data(), padded, r.dtype, spec.op)
                                .withContext("2D " + what));
  } else {
    LIGHTCC_RETURN_IF_ERROR(c.flat->allreduce(buf, count, r.dtype, spec.op).withContext(what));
  }
  LIGHTCC_RETURN_IF_ERROR(deviceFinishScaling(*dev_, buf, count, r.dtype, spec));
  if (!direct) LIGHTCC_RETURN_IF_ERROR(dev_->unpack(buf, out_segs));
  return finish(b, {});
}

Status DeviceExecutor::prepareResidual(DeviceTopkStore::Entry& e, int32_t set, const std::string& name, size_t count,
                                       size_t padded) {
  if (e.count == padded) return Status::OK();
  if (e.residual && e.elements == count) {
    // The same tensor padded otherwise (alone in 2D, or fused): its state carries over.
    for (device::BufferPtr* buf : {&e.residual, &e.velocity}) {
      if (!*buf) continue;
      device::BufferPtr grown;
      LIGHTCC_RETURN_IF_ERROR(dev_->alloc(padded * sizeof(float), &grown));
      LIGHTCC_RETURN_IF_ERROR(dev_->zero(grown->data(), padded * sizeof(float)));
      LIGHTCC_RETURN_IF_ERROR(dev_->copy(grown->data(), (*buf)->data(), count * sizeof(float)));
      *buf = std::move(grown);
    }
    e.count = padded;
    return Status::OK();
  }
  const Config& config = *env_.config;
  LIGHTCC_RETURN_IF_ERROR(dev_->alloc(padded * sizeof(float), &e.residual));
  // A residual restored from a checkpoint before this tensor first ran waits in the host store.
  bool restored = false;
  TopkStore::Entry& saved = env_.topk->entry(set, name);
  {
    std::lock_guard<std::mutex> hold(saved.mu);
    if (saved.state.residual.size() == count) {
      std::vector<float> padded_copy(padded, 0.0f);
      std::copy(saved.state.residual.begin(), saved.state.residual.end(), padded_copy.begin());
      LIGHTCC_RETURN_IF_ERROR(e.residual->upload(padded_copy.data(), padded * sizeof(float)));
      saved.state.residual.clear();
      restored = true;
    }
  }
  if (!restored) LIGHTCC_RETURN_IF_ERROR(dev_->zero(e.residual->data(), padded * sizeof(float)));
  e.velocity.reset();  // made by the first step with momentum correction
  e.count = padded;
  e.elements = count;
  e.steps = restored ? topkRestoredSteps(config) : 0;
  e.last.reset();
  return Status::OK();
}

// Reads a tensor's step from the host's store — the front's declarations (momentum, Nesterov)
// live there, as for the host executor — reports its progress back, and makes its velocity on
// the first step with momentum correction.
Status DeviceExecutor::topkStep(DeviceTopkStore::Entry& e, int32_t set, const std::string& name, TopkStep* step) {
  TopkStore::Entry& declared = env_.topk->entry(set, name);
  TopkTensorOptions options;
  {
    std::lock_guard<std::mutex> hold(declared.mu);
    options = declared.options;
  }
  *step = topkStepFor(*env_.config, e.steps, env_.rank, options);
  ++e.steps;
  {
    std::lock_guard<std::mutex> hold(declared.mu);
    declared.state.steps = e.steps;
    declared.train.applied_momentum = step->params.momentum;
  }
  if (step->params.momentum > 0 && !e.velocity) {
    LIGHTCC_RETURN_IF_ERROR(dev_->alloc(e.count * sizeof(float), &e.velocity));
    std::lock_guard<std::mutex> hold(declared.mu);  // a velocity restored before its first step
    if (declared.state.velocity.size() == e.elements) {
      std::vector<float> padded_copy(e.count, 0.0f);
      std::copy(declared.state.velocity.begin(), declared.state.velocity.end(), padded_copy.begin());
      LIGHTCC_RETURN_IF_ERROR(e.velocity->upload(padded_copy.data(), e.count * sizeof(float)));
      declared.state.velocity.clear();
    } else {
      LIGHTCC_RETURN_IF_ERROR(dev_->zero(e.velocity->data(), e.count * sizeof(float)));
    }
  }
  return Status::OK();
}

Status DeviceExecutor::gatherTopk(const Batch& b, size_t g, TopkWork* w) {
  const Response& r = *b.response;
  const size_t esize = dtypeSize(r.dtype);
  w->fused = r.names.size() > 1;
  w->layout.dtype = r.dtype;
  size_t offset = 0;
  for (size_t i = 0; i < r.names.size(); ++i) {
    const size_t count = static_cast<size_t>(tensorBytes(r, i)) / esize;
    DeviceTopkStore::Entry& e = env_.device_topk->entry(r.process_set_id, r.names[i]);
    w->locks.emplace_back(e.mu);
    // A fused tensor needs no padding of its own; one padded earlier keeps its buffers.
    const size_t own = !w->fused                                 ? roundUp(std::max<size_t>(count, 1), g)
                       : e.residual && e.elements == count ? e.count
                                                           : count;
    LIGHTCC_RETURN_IF_ERROR(dev_->waitFor(e.last));  // before prepareResidual may copy the state
    LIGHTCC_RETURN_IF_ERROR(prepareResidual(e, r.process_set_id, r.names[i], count, own));
    TopkStep step;
    LIGHTCC_RETURN_IF_ERROR(topkStep(e, r.process_set_id, r.names[i], &step));
    if (i == 0) w->params = step.params;
    w->dense = w->dense || step.dense;
    w->momentum = w->momentum || step.params.momentum > 0;
    w->layout.segments.push_back({offset, count, count == 0 ? 0 : kernels::topkK(count, step.params.density),
                                  step.params.momentum, step.params.nesterov});
    offset += count;
    w->entries.push_back(&e);
  }
  w->padded = roundUp(std::max<size_t>(w->layout.count(), 1), g);
  return Status::OK();
}

Status DeviceExecutor::stageTopk(const Batch& b, TopkWork* w) {
  const size_t esize = dtypeSize(w->layout.dtype);
  const size_t padded = w->padded;
  // The input, or zeros for a joined rank; the output, or scratch (always, fused).
  LIGHTCC_RETURN_IF_ERROR(grow(&fusion_, padded * esize));
  w->work = fusion_->data();
  w->in = w->work;
  w->out = w->work;
  if (!w->fused) {
    if (const TensorEntry* p = b.entry(0)) {
      w->in = p->input;
      w->out = p->output;
    } else {
      LIGHTCC_RETURN_IF_ERROR(dev_->zero(w->work, padded * esize));
    }
    DeviceTopkStore::Entry& e = *w->entries[0];
    w->state = {static_cast<float*>(e.residual->data()), e.velocity ? static_cast<float*>(e.velocity->data()) : nullptr};
    return Status::OK();
  }
  LIGHTCC_RETURN_IF_ERROR(dev_->zero(w->work, padded * esize));  // a joined rank's tensors add zeros
  LIGHTCC_RETURN_IF_ERROR(grow(&staged_residual_, padded * sizeof(float)));
  w->state.residual = static_cast<float*>(staged_residual_->data());
  LIGHTCC_RETURN_IF_ERROR(dev_->zero(w->state.residual, padded * sizeof(float)));
  if (w->momentum) {
    LIGHTCC_RETURN_IF_ERROR(grow(&staged_velocity_, padded * sizeof(float)));
    w->state.velocity = static_cast<float*>(staged_velocity_->data());
    LIGHTCC_RETURN_IF_ERROR(dev_->zero(w->state.velocity, padded * sizeof(float)));
  }
  std::vector<device::Segment> in_segs;
  for (size_t i = 0; i < w->entries.size(); ++i) {
    const SparseSegment& seg = w->layout.segments[i];
    if (const TensorEntry* p = b.entry(i)) {
      in_segs.push_back({const_cast<void*>(p->input), seg.offset * esize, seg.count * esize});
      w->out_segs.push_back({p->output, seg.offset * esize, seg.count * esize});
    }
    LIGHTCC_RETURN_IF_ERROR(dev_->copy(w->state.residual + seg.offset, w->entries[i]->residual->data(),
                                       seg.count * sizeof(float)));
    if (w->state.velocity != nullptr && w->entries[i]->velocity) {
      LIGHTCC_RETURN_IF_ERROR(dev_->copy(w->state.velocity + seg.offset, w->entries[i]->velocity->data(),
                                         seg.count * sizeof(float)));
    }
  }
  return dev_->pack(w->work, in_segs);
}

Status DeviceExecutor::unstageTopk(TopkWork& w, bool outputs) {
  if (w.fused) {
    if (outputs) LIGHTCC_RETURN_IF_ERROR(dev_->unpack(w.work, w.out_segs));
    for (size_t i = 0; i < w.entries.size(); ++i) {
      const SparseSegment& seg = w.layout.segments[i];
      LIGHTCC_RETURN_IF_ERROR(dev_->copy(w.entries[i]->residual->data(), w.state.residual + seg.offset,
                                         seg.count * sizeof(float)));
      if (w.state.velocity != nullptr && w.entries[i]->velocity) {
        LIGHTCC_RETURN_IF_ERROR(dev_->copy(w.entries[i]->velocity->data(), w.state.velocity + seg.offset,
                                           seg.count * sizeof(float)));
      }
    }
  }
  device::EventPtr done;
  LIGHTCC_RETURN_IF_ERROR(dev_->record(&done));
  for (DeviceTopkStore::Entry* e : w.entries) e->last = done;
  return Status::OK();
}

Status DeviceExecutor::topk(Batch& b, SetComms& c, Algorithm algo) {
  const Response& r = *b.response;
  const bool two_level = algo == Algorithm::kTwoLevelTopk;
  const size_t g = two_level ? static_cast<size_t>(c.intra->size()) : 1;
  const size_t esize = dtypeSize(r.dtype);
  const ReduceSpec spec = reduceSpecFor(r, c.flat->size());
  TopkWork w;
  LIGHTCC_RETURN_IF_ERROR(gatherTopk(b, g, &w));
  LIGHTCC_RETURN_IF_ERROR(stageTopk(b, &w));
  const SparseLayout& layout = w.layout;
  const TopkParams& params = w.params;
  const size_t padded = w.padded, count = layout.count();
  const std::string& name = r.names.front();
  const bool fused = w.fused;
  // As the host executor: dense when the merge would move more bytes than a dense allreduce
  // (the exchange that decides is 2D's cross-group one over a shard).
  const int groups = two_level ? c.cross->size() : c.flat->size();
  const size_t share = padded / g;
  const size_t pairs = two_level ? kernels::topkK(share, params.density) : layout.pairs();
  const bool cheaper = sparseMovesFewerBytes(groups, share, esize, pairs);
  if (!w.dense && !cheaper && env_.stats != nullptr) env_.stats->topk_dense_batches.fetch_add(1);
  const std::string what = "top-k allreduce of '" + name + "'" +
                           (fused ? " and " + std::to_string(r.names.size() - 1) + " more fused" : "");
  if (w.dense || !cheaper) {
    // Without momentum the residuals wait untouched; with it they go out whole.
    if (!w.momentum) {
      LIGHTCC_RETURN_IF_ERROR(allreduce(b, c, two_level ? Algorithm::kTwoLevel : Algorithm::kLinks));
      return unstageTopk(w, false);
    }
    LIGHTCC_RETURN_IF_ERROR(denseFromResidual(c, layout, w.state, spec, two_level, w.in, w.out, padded)
                                .withContext("dense step of " + what));
    LIGHTCC_RETURN_IF_ERROR(unstageTopk(w, true));
    return finish(b, {});
  }
  if (two_level) {
    LIGHTCC_RETURN_IF_ERROR(deviceTwoLevelTopkAllreduce(*dev_, *c.intra, *c.cross, topk_scratch_, w.state, w.in, w.out,
                                                        w.work, count, padded, r.dtype, spec, params)
                                .withContext("2D " + what));
  } else {
    // On host memory the exchange's bytes are the SetComm's to count (NCCL's are not visible).
    const SetComm* host = backend_ == Backend::kHost ? &channel_.comms.at(r.process_set_id) : nullptr;
    const uint64_t sent_before = host != nullptr ? host->sent_bytes : 0;
    LIGHTCC_RETURN_IF_ERROR(
        deviceTopkAllreduce(*dev_, *c.flat, topk_scratch_, w.state, w.in, w.out, layout, spec, params).withContext(what));
    if (host != nullptr && env_.stats != nullptr) {
      env_.stats->topk_bytes_sent.fetch_add(host->sent_bytes - sent_before, std::memory_order_relaxed);
    }
  }
  LIGHTCC_RETURN_IF_ERROR(unstageTopk(w, true));
  if (env_.stats != nullptr) env_.stats->topk_batches.fetch_add(1);
  return finish(b, {});
}

Status DeviceExecutor::denseFromResidual(SetComms& c, const SparseLayout& layout, const DeviceTopkResidual& state,
                                         const ReduceSpec& spec, bool two_level, const void* in, void* out,
                                         size_t padded) {
  const size_t count = layout.count();
  LIGHTCC_RETURN_IF_ERROR(deviceSparseAccumulate(*dev_, layout, in, static_cast<float>(spec.prescale), state));
  LIGHTCC_RETURN_IF_ERROR(grow(&dense_, padded * sizeof(float)));
  auto* sum = static_cast<float*>(dense_->data());
  LIGHTCC_RETURN_IF_ERROR(dev_->copy(sum, state.residual, padded * sizeof(float)));
  LIGHTCC_RETURN_IF_ERROR(dev_->zero(state.residual, padded * sizeof(float)));
  const ReduceSpec dense{DataType::kFloat32, spec.op, 1.0, spec.postscale};
  if (two_level) {
    LIGHTCC_RETURN_IF_ERROR(grow(&shard_, padded / static_cast<size_t>(c.intra->size()) * sizeof(float)));
    LIGHTCC_RETURN_IF_ERROR(
        deviceTwoLevelAllreduce(*c.intra, *c.cross, sum, shard_->data(), padded, DataType::kFloat32, dense.op));
  } else {
    LIGHTCC_RETURN_IF_ERROR(c.flat->allreduce(sum, count, DataType::kFloat32, dense.op));
  }
  LIGHTCC_RETURN_IF_ERROR(deviceFinishScaling(*dev_, sum, count, DataType::kFloat32, dense));
  return dev_->fromFloat(out, sum, count, layout.dtype);
}

Executor& RoutingExecutor::pick(const Batch& b) {
  const Response& r = *b.response;
  if (r.on_device) {
    if (!device_) device_ = std::make_unique<DeviceExecutor>(env_, channel_, DeviceExecutor::Backend::kCuda);
    return *device_;
  }
  if (!env_.config->device_executor_on_host || r.reduce_op == ReduceOp::kAdasum) return host_;
  if (!emulated_) emulated_ = std::make_unique<DeviceExecutor>(env_, channel_, DeviceExecutor::Backend::kHost);
  return *emulated_;
}

Status RoutingExecutor::run(Batch& b) { return pick(b).run(b); }

void RoutingExecutor::fail(Batch& b, const Status& st) { pick(b).fail(b, st); }

void RoutingExecutor::abort() {
  if (device_) device_->abort();
}

void RoutingExecutor::dropSet(int32_t set) {
  if (device_) device_->dropSet(set);
  if (emulated_) emulated_->dropSet(set);
}

}  // namespace lightcc
