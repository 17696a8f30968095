// DeviceExecutor: GPU batches on its own stream — layout, communicators, completion — over csrc/algorithms' device schedules; and the routing.
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
#include "algorithms/host_device.h"
#include "device/nccl.h"
#include "engine/cost_model.h"
#include "engine/device_pacing.h"
#include "engine/fusion.h"
#include "engine/two_d_choice.h"
#include "kernels/topk.h"

namespace lightcc {
namespace {

size_t roundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }

// Both sides of NCCL: only the variables the user left alone are set, before NCCL's first init.
void pointNcclAtPlugin(const ExecEnv& env) {
  static std::once_flag once;
  std::call_once(once, [&env] {
    if (!env.device.net_plugin.empty()) setenv("NCCL_NET_PLUGIN", env.device.net_plugin.c_str(), 0);
    if (!env.device.job_secret.empty()) setenv("HARP_JOB_SECRET", env.device.job_secret.c_str(), 0);
    // NCCL gives one network peer two channels; HARP spreads each channel's flows over its
    // instances, and with four channels it moved twice the bytes on the H100 bench
    // (benchmarks/gpu/results). NCCL reads this once per process, at its first communicator.
    const std::string harp = "libnccl-net-harp.so";
    const std::string& p = env.device.net_plugin;
    if (p.size() >= harp.size() && p.compare(p.size() - harp.size(), harp.size(), harp) == 0) {
      setenv("NCCL_MIN_NCHANNELS", "4", 0);
    }
  });
}

}  // namespace

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
  if (env_.device.inflight) env_.device.inflight->add(done);
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
    dev_->countInto(env_.device.allocs);
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
  const device::NcclLibrary* nccl = device::NcclLibrary::get(env_.device.nccl_library, &why);
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
  // 2D on GPUs only when asked for: NCCL builds its own hierarchy, and the cost model that
  // chooses 2D by itself prices host links, not the device's (two_d_choice.h).
  auto hier = twoDByRequest(*env_.config) ? channel_.hier.find(set) : channel_.hier.end();
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
      auto hier = twoDByRequest(*env_.config) ? channel_.hier.find(set) : channel_.hier.end();  // as makeCudaComms
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
  if (env_.device.batches != nullptr) env_.device.batches->fetch_add(1, std::memory_order_relaxed);
  LIGHTCC_RETURN_IF_ERROR(ready(b));
  SetComms* c = nullptr;
  LIGHTCC_RETURN_IF_ERROR(commsFor(r.process_set_id, &c));
  const bool trace = env_.rank == 0 && env_.timeline->active();
  if (trace) {
    for (const auto& n : r.names) env_.timeline->begin(n, opTypeName(r.op));
  }
  Status st = runOp(b, *c);
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


Executor& RoutingExecutor::pick(const Batch& b) {
  const Response& r = *b.response;
  if (r.on_device) {
    if (!device_) device_ = std::make_unique<DeviceExecutor>(env_, channel_, DeviceExecutor::Backend::kCuda);
    return *device_;
  }
  if (!env_.config->device.executor_on_host || r.reduce_op == ReduceOp::kAdasum) return host_;
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
