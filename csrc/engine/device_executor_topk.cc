// DeviceExecutor's top-k: the device residual store, each tensor's step, staging a fused batch, sparse and dense steps.
//
// The host executor's counterpart is executor_topk.cc; both follow one schedule (topk_schedule.h).
#include <algorithm>
#include <cstring>

#include "algorithms/device_allreduce.h"
#include "algorithms/device_topk.h"
#include "algorithms/topk_schedule.h"
#include "common/logging.h"
#include "engine/cost_model.h"
#include "engine/device_executor.h"
#include "engine/fusion.h"
#include "kernels/topk.h"

namespace lightcc {
namespace {
size_t roundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }
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
    DeviceTopkStore::Entry& e = env_.device.topk->entry(r.process_set_id, r.names[i]);
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
  if (!w.dense && !cheaper && env_.stats != nullptr) env_.stats->batches.topk_dense_batches.fetch_add(1);
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
      env_.stats->traffic.topk_bytes_sent.fetch_add(host->sent_bytes - sent_before, std::memory_order_relaxed);
    }
  }
  LIGHTCC_RETURN_IF_ERROR(unstageTopk(w, true));
  if (env_.stats != nullptr) env_.stats->batches.topk_batches.fetch_add(1);
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
  return dev_->topk().fromFloat(out, sum, count, layout.dtype);
}

}  // namespace lightcc
