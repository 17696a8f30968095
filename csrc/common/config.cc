// Config: the flag table and its parser; the only file in the core that reads the environment.
#include "common/config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <sstream>

namespace lightcc {

const char* fusionStrategyName(FusionStrategy s) {
  switch (s) {
    case FusionStrategy::kSize: return "size";
    case FusionStrategy::kOrder: return "order";
    case FusionStrategy::kCost: return "cost";
  }
  return "?";
}

const char* twoDModeName(TwoDMode m) {
  switch (m) {
    case TwoDMode::kAuto: return "auto";
    case TwoDMode::kOn: return "1";
    case TwoDMode::kOff: return "0";
  }
  return "?";
}

namespace {

using Setter = std::function<Status(const std::string& name, const std::string& value, Config*)>;

struct FlagSpec {
  FlagInfo info;
  Setter set;
};

Status badValue(const std::string& name, const std::string& value, const std::string& expected) {
  return Status::InvalidArgument("environment variable " + name + "='" + value +
                                 "' is invalid: expected " + expected);
}

Status parseInt(const std::string& name, const std::string& v, int64_t lo, int64_t hi,
                int64_t* out) {
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || errno != 0 || *end != '\0' || x < lo || x > hi) {
    return badValue(name, v, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = x;
  return Status::OK();
}

Status parseDouble(const std::string& name, const std::string& v, double lo, double hi,
                   double* out) {
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || errno != 0 || *end != '\0' || !std::isfinite(x) || x < lo || x > hi) {
    std::ostringstream os;
    os << "a number in [" << lo << ", " << hi << "]";
    return badValue(name, v, os.str());
  }
  *out = x;
  return Status::OK();
}

Status parseBool(const std::string& name, const std::string& v, bool* out) {
  if (v == "1" || v == "true" || v == "True" || v == "TRUE" || v == "yes") {
    *out = true;
  } else if (v == "0" || v == "false" || v == "False" || v == "FALSE" || v == "no" || v.empty()) {
    *out = false;
  } else {
    return badValue(name, v, "0 or 1");
  }
  return Status::OK();
}

// One of the 2D flags: "auto" (or empty) leaves the choice to the engine, else a bool. The three
// names combine the same whatever their order: any 1 forces 2D on, else any 0 forces it off.
Status parseTwoD(const std::string& name, const std::string& v, bool zero_forces_off, Config* c) {
  if (v == "auto" || v.empty()) return Status::OK();
  bool on = false;
  if (!parseBool(name, v, &on).ok()) return badValue(name, v, "0, 1 or auto");
  if (on) {
    c->two_d = TwoDMode::kOn;
  } else if (zero_forces_off && c->two_d == TwoDMode::kAuto) {
    c->two_d = TwoDMode::kOff;
  }
  return Status::OK();
}

Status parseLogLevel(const std::string& name, std::string v, LogLevel* out) {
  for (auto& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::pair<const char*, LogLevel> kLevels[] = {
      {"TRACE", LogLevel::kTrace}, {"DEBUG", LogLevel::kDebug},     {"INFO", LogLevel::kInfo},
      {"WARNING", LogLevel::kWarning}, {"WARN", LogLevel::kWarning}, {"ERROR", LogLevel::kError},
      {"FATAL", LogLevel::kFatal}};
  for (const auto& [text, level] : kLevels) {
    if (v == text) {
      *out = level;
      return Status::OK();
    }
  }
  return badValue(name, v, "one of TRACE, DEBUG, INFO, WARNING, ERROR, FATAL");
}

Status parseCoreList(const std::string& name, const std::string& v, std::vector<int>* out) {
  out->clear();
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int64_t core = 0;
    LIGHTCC_RETURN_IF_ERROR(parseInt(name, item, 0, 4095, &core));
    out->push_back(static_cast<int>(core));
  }
  if (out->empty()) return badValue(name, v, "a comma-separated list of core ids");
  return Status::OK();
}

const std::vector<FlagSpec>& specs() {
  static const std::vector<FlagSpec> kSpecs = {
      {{"HOROVOD_FUSION_THRESHOLD", "bytes", "134217728",
        "Largest fused buffer; 0 turns fusion off."},
       [](auto& n, auto& v, Config* c) {
         return parseInt(n, v, 0, int64_t{1} << 40, &c->fusion.threshold_bytes);
       }},
      {{"HOROVOD_CYCLE_TIME", "ms", "0",
        "Coalescing delay before the next negotiation cycle when work kept arriving during the "
        "last one. 0 (lightcc's default; Horovod's is 1): negotiate as soon as work arrives, since "
        "a cached cycle costs microseconds and work queued during a cycle batches by itself."},
       [](auto& n, auto& v, Config* c) { return parseDouble(n, v, 0.0, 1e5, &c->fusion.cycle_time_ms); }},
      {{"HOROVOD_CACHE_CAPACITY", "entries", "1024",
        "Response-cache entries (bit-vector fast path); 0 disables the cache."},
       [](auto& n, auto& v, Config* c) { return parseInt(n, v, 0, 1 << 20, &c->fusion.cache_capacity); }},
      {{"HOROVOD_TIMELINE", "path", "",
        "Write a Chrome-trace timeline on rank 0 to this path; DYNAMIC = off until start_timeline."},
       [](auto&, auto& v, Config* c) {
         c->diagnostics.timeline_path = v;
         return Status::OK();
       }},
      {{"HOROVOD_TIMELINE_MARK_CYCLES", "bool", "0", "Mark every negotiation cycle in the timeline."},
       [](auto& n, auto& v, Config* c) { return parseBool(n, v, &c->diagnostics.timeline_mark_cycles); }},
      {{"HOROVOD_STALL_CHECK_DISABLE", "bool", "0", "Turn the stall inspector off."},
       [](auto& n, auto& v, Config* c) {
         bool disable = false;
         LIGHTCC_RETURN_IF_ERROR(parseBool(n, v, &disable));
         c->diagnostics.stall_check_enabled = !disable;
         return Status::OK();
       }},
      {{"HOROVOD_STALL_CHECK_TIME_SECONDS", "s", "60",
        "Warn (naming missing ranks and tensors) when a tensor waits this long for other ranks."},
       [](auto& n, auto& v, Config* c) {
         return parseDouble(n, v, 0.001, 1e7, &c->diagnostics.stall_check_seconds);
       }},
      {{"LIGHTCC_PEER_CHECK_S", "s", "auto",
        "How long the peer check of a failed operation's error may probe the other ranks (a TCP connect "
        "each), to name a host that is cut off or down; auto: a tenth of LIGHTCC_TIMEOUT within 0.2 to 2 s; "
        "0: no check. lightccrun's elastic workers default to 0: the driver names a lost rank and host "
        "itself, and the probe of a dead host would hold up the recovery for its whole budget."},
       [](auto& n, auto& v, Config* c) {
         if (v == "auto") {
           c->diagnostics.peer_check_seconds = -1.0;
           return Status::OK();
         }
         return parseDouble(n, v, 0.0, 60.0, &c->diagnostics.peer_check_seconds);
       }},
      {{"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "s", "0",
        "Fail stalled tensors with an error after this long; 0 = only warn."},
       [](auto& n, auto& v, Config* c) {
         return parseDouble(n, v, 0.0, 1e7, &c->diagnostics.stall_shutdown_seconds);
       }},
      {{"HOROVOD_LOG_LEVEL", "level", "WARNING", "TRACE, DEBUG, INFO, WARNING, ERROR or FATAL."},
       [](auto& n, auto& v, Config* c) { return parseLogLevel(n, v, &c->diagnostics.log_level); }},
      {{"LIGHTCC_LOG_LEVEL", "level", "", "Overrides HOROVOD_LOG_LEVEL when set."},
       [](auto& n, auto& v, Config* c) { return parseLogLevel(n, v, &c->diagnostics.log_level); }},
      {{"HOROVOD_AUTOTUNE", "bool", "0",
        "Online search over fusion threshold, cycle time, fusion strategy, streams, 2D on/off and (with "
        "top-k on) the top-k threshold, scored by bytes reduced per second; every rank applies rank 0's "
        "choice at the same cycle, then the best is frozen (docs/tuning.md)."},
       [](auto& n, auto& v, Config* c) { return parseBool(n, v, &c->autotune.enabled); }},
      {{"HOROVOD_AUTOTUNE_LOG", "path", "",
        "With HOROVOD_AUTOTUNE: rank 0 writes one CSV row per sample (step, cycle, every parameter, "
        "score) here; `lightcc-bench autotune-plot` draws it."},
       [](auto&, auto& v, Config* c) {
         c->autotune.log = v;
         return Status::OK();
       }},
      {{"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "samples", "3",
        "Samples measured and discarded before the search starts (the engine's own warm-up)."},
       [](auto& n, auto& v, Config* c) { return parseInt(n, v, 0, 1 << 20, &c->autotune.warmup_samples); }},
      {{"HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "steps", "10",
        "Training steps scored per candidate (after one discarded switch-over step); the score is "
        "the median of their bytes-per-second."},
       [](auto& n, auto& v, Config* c) { return parseInt(n, v, 1, 1 << 20, &c->autotune.steps_per_sample); }},
      {{"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "samples", "20",
        "Samples of the Bayesian (Gaussian process, expected improvement) stage over the numeric "
        "parameters, after the categorical ones are settled."},
       [](auto& n, auto& v, Config* c) { return parseInt(n, v, 1, 1000, &c->autotune.bayes_max_samples); }},
      {{"HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "alpha", "0.8",
        "Noise added to the Gaussian process's kernel diagonal (scores normalised to mean 0, sd 1); "
        "larger trusts single samples less."},
       [](auto& n, auto& v, Config* c) { return parseDouble(n, v, 1e-6, 100.0, &c->autotune.gp_noise); }},
      {{"HOROVOD_DYNAMIC_PROCESS_SETS", "bool", "0",
        "Allow add_process_set/remove_process_set after init."},
       [](auto& n, auto& v, Config* c) { return parseBool(n, v, &c->dynamic_process_sets); }},
      {{"HOROVOD_THREAD_AFFINITY", "cores", "",
        "Comma list of cores, one per local rank, to pin the engine thread to."},
       [](auto& n, auto& v, Config* c) { return parseCoreList(n, v, &c->placement.thread_affinity); }},
      {{"LIGHTCC_BIND", "auto|core|none", "auto",
        "core: bind each local rank's calling thread, and the threads it starts after init, to its "
        "own share of the cores (with c cores and l local ranks, c/l each). auto: the same where "
        "it is safe: at least two local ranks, no more ranks than cores, and no launcher, numactl "
        "or cpuset has already narrowed the process's cores. none: never."},
       [](auto& n, auto& v, Config* c) {
         if (v == "auto") c->placement.binding = CpuBinding::kAuto;
         else if (v == "core") c->placement.binding = CpuBinding::kCore;
         else if (v == "none") c->placement.binding = CpuBinding::kNone;
         else return badValue(n, v, "auto, core or none");
         return Status::OK();
       }},
      {{"LIGHTCC_OVERLAP", "auto|on|off", "auto",
        "on: the fronts start each host gradient's collective as soon as the backward pass produces "
        "it, to overlap the rest of that pass. off: they start them all when the step waits for them "
        "(DDP's buckets when the backward pass ends: DDP waits for them there; GPU gradients always "
        "start at once: their collectives run on the device). "
        "auto: off where every rank is on this host and this rank has a single core, so the "
        "collectives (copies through shared memory, no network to wait for) could only take "
        "that core from the backward pass; on elsewhere."},
       [](auto& n, auto& v, Config* c) {
         if (v == "auto") c->placement.overlap = Overlap::kAuto;
         else if (v == "on") c->placement.overlap = Overlap::kOn;
         else if (v == "off") c->placement.overlap = Overlap::kOff;
         else return badValue(n, v, "auto, on or off");
         return Status::OK();
       }},
      {{"LIGHTCC_TIMEOUT", "s", "60",
        "How long a rank waits for a peer without progress before failing with an error."},
       [](auto& n, auto& v, Config* c) { return parseDouble(n, v, 0.1, 1e7, &c->timeout_seconds); }},
      {{"LIGHTCC_SHM_CHUNK_BYTES", "bytes", "1048576",
        "Pipeline chunk of the shared-memory collectives (each rank stages two; small enough that "
        "staged data is still in cache when the peers read it) and of the ring allreduce between "
        "hosts (at least 16 KiB: each chunk is reduced and forwarded as it arrives)."},
       [](auto& n, auto& v, Config* c) {
         return parseInt(n, v, 4096, int64_t{1} << 30, &c->shm.chunk_bytes);
       }},
      {{"LIGHTCC_SHM_ONESHOT_BYTES", "bytes", "262144",
        "Shared-memory allreduces up to this size (at 2 ranks per host; scaled by 2/p for p ranks, "
        "and at most one chunk) run in one step: every rank stages all of its input and reduces the "
        "whole tensor itself — one barrier instead of three; 0 = off."},
       [](auto& n, auto& v, Config* c) {
         return parseInt(n, v, 0, int64_t{1} << 30, &c->shm.oneshot_bytes);
       }},
      {{"LIGHTCC_SHM_RING_BYTES", "bytes", "1048576",
        "Capacity of each shared-memory point-to-point ring (control messages, ring algorithms)."},
       [](auto& n, auto& v, Config* c) {
         return parseInt(n, v, 4096, int64_t{1} << 30, &c->shm.ring_bytes);
       }},
      {{"LIGHTCC_SPIN_US", "us", "50",
        "How long a waiting engine spins before it sleeps on a futex (times the local ranks per core, yielding, when they outnumber the cores)."},
       [](auto& n, auto& v, Config* c) { return parseDouble(n, v, 0.0, 1e6, &c->shm.spin_us); }},
      {{"LIGHTCC_DIRECT", "bool", "1",
        "On a job whose ranks share one host, a synchronous allreduce of host memory up to the one-step "
        "size (LIGHTCC_SHM_ONESHOT_BYTES), or a barrier, runs in the calling thread in one shared-memory step that both "
        "agrees on the operation and carries the data, instead of a negotiation cycle and then the "
        "collective; anything the step cannot settle goes to the engine as usual."},
       [](auto& n, auto& v, Config* c) { return parseBool(n, v, &c->shm.direct); }},
      {{"LIGHTCC_DIRECT_WINDOW_US", "us", "5000",
        "How long a direct step waits for every rank to post before it hands the operation to the "
        "engine (which then waits as long as it takes); after 16 such steps in a row a rank stops "
        "taking direct steps."},
       [](auto& n, auto& v, Config* c) { return parseDouble(n, v, 0.0, 60e6, &c->shm.direct_window_us); }},
      {{"LIGHTCC_NET_PLUGIN", "path", "",
        "NCCL net plugin used between hosts; empty = the bundled HARP libnccl-net-harp.so."},
       [](auto&, auto& v, Config* c) {
         c->links.net_plugin = v;
         return Status::OK();
       }},
      {{"LIGHTCC_NCCL_LIBRARY", "path", "",
        "libnccl.so.2 the engine loads for GPU tensors; empty = the nvidia-nccl wheel's (the one torch "
        "uses), else whatever the dynamic loader finds."},
       [](auto&, auto& v, Config* c) {
         c->device.nccl_library = v;
         return Status::OK();
       }},
      {{"LIGHTCC_DEVICE_EXECUTOR", "mode", "auto",
        "auto: GPU tensors run on the device executor (CUDA kernels + NCCL), CPU tensors on the host "
        "one; host: CPU tensors too take the device executor's schedules, on a host implementation of "
        "its device interface (how CI tests those schedules without a GPU)."},
       [](auto& n, auto& v, Config* c) {
         if (v != "auto" && v != "host") return badValue(n, v, "auto or host");
         c->device.executor_on_host = v == "host";
         return Status::OK();
       }},
      {{"LIGHT_DEVICE_INFLIGHT", "int", "2",
        "With LIGHT_FUSION_STRATEGY=size: GPU allreduces agreed while this many fused GPU batches "
        "are still running wait, and go out fused as one when fewer are (every rank votes, so all "
        "fuse alike); 0 launches each as soon as it is agreed. Fuses as much as the network is behind "
        "the backward pass, with no bucket size to tune."},
       [](auto& n, auto& v, Config* c) { return parseInt(n, v, 0, 64, &c->device.inflight); }},
      {{"LIGHTCC_FORCE_RING", "bool", "0",
        "Use the link-based ring algorithms even between ranks of one host (tests, benchmarks)."},
       [](auto& n, auto& v, Config* c) { return parseBool(n, v, &c->links.force_ring); }},
      {{"LIGHTCC_RD_ALLREDUCE_BYTES", "bytes", "65536",
        "Allreduces over links (members on several hosts) up to this size run by recursive doubling: "
        "log2(p) whole-buffer exchanges instead of the ring's 2(p-1) steps; larger ones take the "
        "ring; 0 = always the ring. Must match on every rank."},
       [](auto& n, auto& v, Config* c) {
         return parseInt(n, v, 0, int64_t{1} << 40, &c->links.rd_allreduce_bytes);
       }},
      {{"LIGHTCC_RD_LEADERS", "bool", "1",
        "Recursive-doubling allreduces (LIGHTCC_RD_ALLREDUCE_BYTES) over a set with several members on "
        "a host: reduce in each host through shared memory, run recursive doubling among the hosts' "
        "lowest members only, then broadcast in each host (log2(hosts) network rounds, one rank a host "
        "on the network); 0 = recursive doubling over every member. Must match on every rank."},
       [](auto& n, auto& v, Config* c) { return parseBool(n, v, &c->links.rd_leaders); }},
      {{"LIGHT_2D_ALLREDUCE", "bool|auto", "auto",
        "Hierarchical (2D) allreduce: reduce-scatter inside each group of LIGHT_INTRA_SIZE ranks "
        "(shared memory), allreduce each shard across groups (every local rank its own flows), "
        "allgather inside the group; host allgathers likewise gather each group's blocks in shared "
        "memory and exchange shares across groups. auto (unset): on for dense allreduces and host "
        "allgathers from the sizes where the alpha-beta model probed at init predicts it faster than "
        "the flat schedule, on 2+ hosts with the same 2+ ranks each (the init log says what was chosen "
        "and why); 1: every allreduce and host allgather, top-k and Adasum too; 0: never."},
       [](auto& n, auto& v, Config* c) { return parseTwoD(n, v, true, c); }},
      {{"HOROVOD_HIERARCHICAL_ALLREDUCE", "bool|auto", "auto", "Horovod's name for LIGHT_2D_ALLREDUCE."},
       [](auto& n, auto& v, Config* c) { return parseTwoD(n, v, true, c); }},
      {{"HOROVOD_TORUS_ALLREDUCE", "bool", "0",
        "Horovod's torus allreduce: the same schedule as LIGHT_2D_ALLREDUCE, which 1 turns on (0 leaves "
        "the choice to LIGHT_2D_ALLREDUCE)."},
       [](auto& n, auto& v, Config* c) { return parseTwoD(n, v, false, c); }},
      {{"LIGHT_INTRA_SIZE", "ranks", "0",
        "Ranks per 2D group (consecutive ranks of one host); 0 = the ranks per host."},
       [](auto& n, auto& v, Config* c) { return parseInt(n, v, 0, 1 << 20, &c->intra_size); }},
      {{"LIGHT_TOPK_ALLREDUCE", "bool", "0",
        "Top-k compressed allreduce with error feedback for float32, float16 and bfloat16 tensors of at "
        "least LIGHT_TOPK_THRESHOLD bytes and LIGHT_TOPK_MIN_DIMS dimensions reduced with Sum or Average, "
        "with Deep Gradient Compression's training recipe (docs/topk.md)."},
       [](auto& n, auto& v, Config* c) { return parseBool(n, v, &c->topk.enabled); }},
      {{"LIGHT_TOPK_THRESHOLD", "bytes", "2097152", "Smallest tensor that top-k compresses."},
       [](auto& n, auto& v, Config* c) {
         return parseInt(n, v, 1, int64_t{1} << 40, &c->topk.threshold_bytes);
       }},
      {{"LIGHT_TOPK_DENSITY", "fraction", "0.01", "Fraction of elements each rank sends (0 < d <= 1)."},
       [](auto& n, auto& v, Config* c) { return parseDouble(n, v, 1e-6, 1.0, &c->topk.density); }},
      {{"LIGHT_TOPK_MIN_DIMS", "dims", "2",
        "Tensors with fewer dimensions stay dense under top-k: biases and norm scales are small and "
        "every element matters (DGC). 1 compresses vectors too. Must match on every rank."},
       [](auto& n, auto& v, Config* c) { return parseInt(n, v, 0, 64, &c->topk.min_dims); }},
      {{"LIGHT_TOPK_WARMUP_STEPS", "steps", "200",
        "Steps per tensor before full compression (decaying density or dense; LIGHT_TOPK_WARMUP). "
        "0 = compress at the target density from the first step."},
       [](auto& n, auto& v, Config* c) { return parseInt(n, v, 0, int64_t{1} << 40, &c->topk.warmup_steps); }},
      {{"LIGHT_TOPK_WARMUP", "mode", "decay",
        "decay: density falls from 25 % to LIGHT_TOPK_DENSITY over the warm-up (Deep Gradient "
        "Compression's schedule); dense: warm-up steps are plain allreduces."},
       [](auto& n, auto& v, Config* c) {
         if (v == "dense" || v == "decay") {
           c->topk.warmup_decay = v == "decay";
           return Status::OK();
         }
         return badValue(n, v, "dense or decay");
       }},
      {{"LIGHT_TOPK_MOMENTUM", "factor", "",
        "DGC momentum correction factor. Unset: the torch DistributedOptimizer declares its SGD "
        "optimizer's momentum per tensor and steps compressed tensors without the optimizer's own "
        "momentum. Set: replaces that factor (0 = off), and applies to tensors no front declared "
        "(whose callers then step by the result as plain SGD)."},
       [](auto& n, auto& v, Config* c) {
         c->topk.momentum_set = true;
         return parseDouble(n, v, 0.0, 0.999999, &c->topk.momentum);
       }},
      {{"LIGHT_TOPK_CLIP", "factor", "4",
        "Local gradient clipping before accumulation: a rank's gradient of a compressed tensor is "
        "scaled down to at most this many times the running mean of its recent norms (0 = off). "
        "Host executor only: GPU tensors are not clipped yet."},
       [](auto& n, auto& v, Config* c) { return parseDouble(n, v, 0.0, 1e6, &c->topk.clip); }},
      {{"LIGHT_TOPK_ERROR_FEEDBACK", "bool", "1",
        "Keep what top-k did not send and add it next step; 0 drops it (biased; for comparison only)."},
       [](auto& n, auto& v, Config* c) { return parseBool(n, v, &c->topk.error_feedback); }},
      {{"LIGHT_NUM_STREAMS", "streams", "1",
        "Fused batches in flight at once (1..8). Above 1, each stream has its own worker thread, "
        "shared-memory staging and counters, and its own links (own HARP comms and flows) to every "
        "peer; batches go to streams round-robin in the agreed order and complete independently. "
        "Must match on every rank."},
       [](auto& n, auto& v, Config* c) { return parseInt(n, v, 1, 8, &c->fusion.num_streams); }},
      {{"LIGHT_FUSION_STRATEGY", "mode", "size",
        "size: fuse whatever is ready each cycle up to HOROVOD_FUSION_THRESHOLD (Horovod); order: "
        "fixed buckets in the order tensors were first agreed (backward order), a small first bucket, "
        "each sent once all its tensors are ready everywhere; cost: order with bucket sizes (and, "
        "with LIGHT_TOPK_ALLREDUCE=1, the top-k threshold, replacing LIGHT_TOPK_THRESHOLD) chosen by "
        "an alpha-beta model probed at init."},
       [](auto& n, auto& v, Config* c) {
         for (FusionStrategy s : {FusionStrategy::kSize, FusionStrategy::kOrder, FusionStrategy::kCost}) {
           if (v == fusionStrategyName(s)) {
             c->fusion.strategy = s;
             return Status::OK();
           }
         }
         return badValue(n, v, "size, order or cost");
       }},
      {{"LIGHT_FUSION_FIRST_BUCKET", "bytes", "1048576",
        "order: size of the first bucket (the last layers' gradients), small so communication "
        "starts early in the backward pass; later buckets fill up to HOROVOD_FUSION_THRESHOLD."},
       [](auto& n, auto& v, Config* c) {
         return parseInt(n, v, 1, int64_t{1} << 40, &c->fusion.first_bucket_bytes);
       }},
      {{"LIGHT_FUSION_FLUSH_MS", "ms", "5",
        "order/cost: send a partly ready bucket when no new tensor was agreed for this long "
        "(a tensor missing from a step); a caller blocked on a held tensor flushes at once."},
       [](auto& n, auto& v, Config* c) { return parseDouble(n, v, 0.0, 1e6, &c->fusion.flush_ms); }},
  };
  return kSpecs;
}

}  // namespace

Status parseConfig(Config* out, const std::map<std::string, std::string>& caller_defaults) {
  Config c;
  for (const auto& spec : specs()) {
    const char* raw = std::getenv(spec.info.name.c_str());
    if (raw != nullptr) {
      LIGHTCC_RETURN_IF_ERROR(spec.set(spec.info.name, std::string(raw), &c));
      continue;
    }
    auto given = caller_defaults.find(spec.info.name);
    if (given != caller_defaults.end()) LIGHTCC_RETURN_IF_ERROR(spec.set(spec.info.name, given->second, &c));
  }
  for (const auto& [name, value] : caller_defaults) {
    bool known = false;
    for (const auto& spec : specs()) known = known || spec.info.name == name;
    if (!known) return Status::InvalidArgument("no lightcc flag is called " + name + " (given the value " + value + ")");
  }
  if (c.shm.chunk_bytes % 64 != 0) {
    return badValue("LIGHTCC_SHM_CHUNK_BYTES", std::to_string(c.shm.chunk_bytes),
                    "a multiple of 64");
  }
  *out = c;
  return Status::OK();
}

const std::vector<FlagInfo>& flagTable() {
  static const std::vector<FlagInfo> kTable = [] {
    std::vector<FlagInfo> t;
    for (const auto& s : specs()) t.push_back(s.info);
    return t;
  }();
  return kTable;
}

}  // namespace lightcc
