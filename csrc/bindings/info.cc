// info.cc: what the core reports and keeps beside the data path — counters, tuning, fusion,
// flags, builds, timelines, process sets and the top-k residuals.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <map>

#include "bindings/errors.h"
#include "bindings/state.h"
#include "common/config.h"
#include "device/cuda_library.h"
#include "device/nccl.h"
#include "engine/fd_count.h"
#include "engine/net_wakeups.h"
#include "kernels/reduce.h"

namespace py = pybind11;

namespace lightcc::bindings {
namespace {

py::dict buildInfo() {
  py::dict d;
  d["simd"] = kernels::simdLevel();
#ifdef LIGHTCC_VERSION
  d["version"] = LIGHTCC_VERSION;
#endif
  return d;
}

// What the GPU data plane would load, loaded now: the answer --check-build prints.
py::dict deviceInfo(const std::string& nccl_hint) {
  py::dict d;
  std::string why;
  const device::CudaLibrary* cuda = device::CudaLibrary::get(&why);
  d["cuda_library"] = cuda ? cuda->path : "";
  d["cuda_error"] = why;
  d["cuda_architectures"] = cuda ? cuda->architectures : "";
  d["cuda_compiler_version"] = cuda ? cuda->cudaVersion : "";
  int gpus = 0;
  std::string device_error;
  if (cuda) {
    Status st = cuda->rt->deviceCount(&gpus);
    if (!st.ok()) {
      gpus = 0;
      device_error = st.message();
    }
  }
  d["cuda_runtime_devices"] = gpus;
  d["cuda_runtime_error"] = device_error;
  why.clear();
  const device::NcclLibrary* nccl = device::NcclLibrary::get(nccl_hint, &why);
  d["nccl_library"] = nccl ? nccl->path() : "";
  d["nccl_version"] = nccl ? nccl->version() : 0;
  d["nccl_error"] = why;
  return d;
}

py::dict topkResiduals() {
  py::dict out;
  Engine& e = engine();
  std::map<std::string, std::vector<float>> residuals;
  Status st;
  {
    py::gil_scoped_release release;
    st = e.topkResiduals(&residuals);
  }
  raise(st);
  for (auto& [name, values] : residuals) {
    auto buf = std::make_shared<HostBuffer>(values.size() * sizeof(float));
    std::memcpy(buf->data(), values.data(), values.size() * sizeof(float));
    out[py::str(name)] = py::cast(buf);
  }
  return out;
}

void setTopkResidual(const std::string& name, py::buffer b) {
  py::buffer_info info = b.request();
  if (info.itemsize != 4 || info.format != py::format_descriptor<float>::format()) {
    throw py::value_error("top-k residuals are float32 arrays");
  }
  Engine& e = engine();
  Status st;
  {
    py::gil_scoped_release release;
    st = e.setTopkResidual(name, static_cast<const float*>(info.ptr), static_cast<size_t>(info.size));
  }
  raise(st);
}

py::dict stats() {
  const EngineStats& s = engine().stats();
  py::dict d;
  d["cycles"] = s.cycle.cycles.load();
  d["slow_cycles"] = s.cycle.slow_cycles.load();
  d["negotiate_ns"] = s.cycle.negotiate_ns.load();
  d["negotiate_wait_ns"] = s.cycle.negotiate_wait_ns.load();
  d["execute_ns"] = s.cycle.execute_ns.load();
  d["cached_responses"] = s.cycle.cached_responses.load();
  d["coordinated_responses"] = s.cycle.coordinated_responses.load();
  d["fused_batches"] = s.cycle.fused_batches.load();
  d["stream_batches"] = s.batches.stream_batches.load();
  d["streams_busy_max"] = s.batches.streams_busy_max.load();
  d["fusion_flushes"] = s.fusion.fusion_flushes.load();
  d["fusion_held"] = s.fusion.fusion_held.load();
  d["fusion_buckets"] = s.fusion.fusion_buckets.load();
  d["caller_cycles"] = s.cycle.caller_cycles.load();
  d["handoff_waits"] = s.cycle.handoff_waits.load();
  d["device_batches"] = s.batches.device_batches.load();
  d["bytes_sent"] = s.traffic.bytes_sent.load();
  d["topk_bytes_sent"] = s.traffic.topk_bytes_sent.load();
  d["topk_batches"] = s.batches.topk_batches.load();
  d["topk_dense_batches"] = s.batches.topk_dense_batches.load();
  d["two_d_batches"] = s.batches.two_d_batches.load();
  d["device_allocs"] = s.device_memory.device_allocs.load();
  d["device_alloc_bytes"] = s.device_memory.device_alloc_bytes.load();
  d["device_front_outputs"] = s.device_memory.device_front_outputs.load();
  d["net_links"] = s.traffic.net_links.load();
  d["net_wakeups"] = NetWakeups::rings();  // process-wide: the net plugin's completion hook rang
  d["shm_links"] = s.traffic.shm_links.load();
  d["direct_ops"] = s.batches.direct_ops.load();
  d["direct_declined"] = s.batches.direct_declined.load();
  const FdCount fds = countOpenFds();  // the whole process's, read now
  d["open_fds"] = fds.fds;
  d["open_sockets"] = fds.sockets;
  return d;
}

py::dict autotuneState() {
  const SettingsPtr t = engine().tuning().current();
  py::dict d;
  d["enabled"] = engine().config().autotune.enabled;
  d["generation"] = t->generation;
  d["applied_cycle"] = t->applied_cycle;
  d["frozen"] = t->frozen;
  d["fusion_threshold_bytes"] = t->params.fusion_threshold;
  d["cycle_time_ms"] = t->params.cycle_time_ms;
  d["fusion_strategy"] = fusionStrategyName(t->params.strategy);
  d["streams"] = t->params.streams;
  d["two_d"] = t->params.two_d;
  d["topk_threshold_bytes"] = t->params.topk_threshold;
  py::list history;
  for (const auto& [cycle, p] : t->history) {
    history.append(py::make_tuple(cycle, p.fusion_threshold, p.cycle_time_ms, fusionStrategyName(p.strategy),
                                  p.streams, p.two_d, p.topk_threshold));
  }
  d["history"] = history;  // (cycle, threshold, cycle ms, strategy, streams, 2D, top-k threshold) per change
  return d;
}

// What init chose for the 2D allreduce (engine/two_d_choice.h) and why.
py::dict twoDInfo() {
  const TwoDChoice& c = engine().tuning().twoD();
  py::dict d;
  d["mode"] = twoDModeName(c.mode);
  d["on"] = c.on();
  d["group_size"] = c.group;
  d["from_bytes"] = c.on() ? py::cast(c.from_bytes) : py::none();
  d["reason"] = c.reason;
  return d;
}

// The cost strategy's fitted alpha-beta model.
py::dict costModelInfo(const CostModel& c) {
  py::dict m;
  m["ranks"] = c.ranks;
  m["hosts"] = c.hosts;
  m["ranks_per_host"] = c.per_host;
  if (c.shm.present) m["shm"] = py::dict(py::arg("alpha_s") = c.shm.alpha, py::arg("beta_s_per_byte") = c.shm.beta);
  if (c.net.present) m["net"] = py::dict(py::arg("alpha_s") = c.net.alpha, py::arg("beta_s_per_byte") = c.net.beta);
  m["topk_select_s_per_byte"] = c.select_per_byte;
  double a = 0, b = 0;
  c.dense(&a, &b);
  m["allreduce"] = py::dict(py::arg("alpha_s") = a, py::arg("beta_s_per_byte") = b);
  m["probe_ms"] = c.probe_ms;
  return m;
}

py::dict fusionInfo() {
  const Engine& e = engine();
  const SettingsPtr settings = e.tuning().current();
  const FusionScheduler::Options& o = settings->fusion;
  py::dict d;
  d["strategy"] = fusionStrategyName(o.strategy);
  d["threshold_bytes"] = o.threshold;
  d["first_bucket_bytes"] = o.first_bucket;
  d["bucket_bytes"] = o.bucket;
  const bool topk = e.config().topk.enabled;
  const int64_t t = settings->params.topk_threshold;
  d["topk_threshold_bytes"] = topk && t != std::numeric_limits<int64_t>::max() ? py::cast(t) : py::none();
  d["topk_min_dims"] = e.config().topk.min_dims;  // the torch front preconditions exactly what is compressed
  if (o.strategy == FusionStrategy::kCost) d["cost_model"] = costModelInfo(e.tuning().costModel());
  return d;
}

py::list flags() {
  py::list out;
  for (const auto& f : flagTable()) {
    py::dict d;
    d["name"] = f.name;
    d["type"] = f.type;
    d["default"] = f.default_value;
    d["doc"] = f.doc;
    out.append(d);
  }
  return out;
}

}  // namespace

void bindInfo(py::module_& m) {
  // Calls that take engine locks release the GIL first: a caller driving the engine takes the
  // GIL to run signal handlers while it may hold those locks.
  m.def("process_sets", [] {
    Engine& e = engine();
    py::gil_scoped_release release;
    return e.processSets();
  });
  m.def("start_timeline", [](const std::string& path, bool mark) { raise(engine().startTimeline(path, mark)); });
  m.def("stop_timeline", [] { raise(engine().stopTimeline()); });
  m.def("build_info", &buildInfo);
  m.def("device_info", &deviceInfo, py::arg("nccl_hint") = "",
        "Loads liblightcc_cuda.so and NCCL as GPU tensors would, and says what was found.");
  m.def("topk_residuals", &topkResiduals, "Copies of the top-k error-feedback residuals (float32 bytes) by tensor name.");
  m.def("set_topk_residual", &setTopkResidual);
  m.def("stats", &stats,
        "Engine counters: cycles (and how many a waiting caller ran), negotiation and execution time, cached vs "
        "coordinated tensors, waits handed off to another thread.");
  m.def("autotune_state", &autotuneState,
        "Autotune (HOROVOD_AUTOTUNE): the parameters in force on this rank, their generation, the cycle that "
        "applied them (the same on every rank) and whether the search has frozen.");
  m.def("overlap_backward", [] { return engine().overlapBackward(); },
        "Whether gradient collectives should start during the backward pass (LIGHTCC_OVERLAP).");
  m.def("fusion_info", &fusionInfo, "Fusion strategy, bucket sizes, top-k threshold and (cost) the fitted alpha-beta model.");
  m.def("two_d_info", &twoDInfo,
        "The 2D (hierarchical) allreduce as init chose it: LIGHT_2D_ALLREDUCE's mode, on or off, the group size, "
        "the smallest dense allreduce that takes it (the cost model's crossover; 0 when forced), and why.");
  m.def("flags", &flags);
  m.def(
      "device_executor_on_host", [] { return engine().config().device.executor_on_host; },
      "LIGHTCC_DEVICE_EXECUTOR=host: the device executor runs host tensors too (the fronts then hand them over "
      "as they would GPU tensors).");
  m.def("check_config", [] {
    Config c;
    raise(parseConfig(&c));
  });
}

}  // namespace lightcc::bindings
