// Config: every environment flag the core reads, declared once and parsed once at init.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace lightcc {

// size: Horovod's per-cycle threshold; order: fixed buckets in first-seen (backward) order;
// cost: order's buckets sized, and top-k routed, by an alpha-beta model probed at init.
enum class FusionStrategy : int { kSize = 0, kOrder = 1, kCost = 2 };
constexpr int kNumFusionStrategies = 3;
static_assert(static_cast<int>(FusionStrategy::kCost) + 1 == kNumFusionStrategies, "kNumFusionStrategies");
// A strategy code read from a peer (the autotuner's vote) names a FusionStrategy.
inline bool isValidFusionStrategy(int code) { return code >= 0 && code < kNumFusionStrategies; }
const char* fusionStrategyName(FusionStrategy s);

// LIGHT_2D_ALLREDUCE: auto (unset) lets the engine choose by topology and cost model
// (engine/two_d_choice.h); on and off force the hierarchical allreduce either way.
enum class TwoDMode : int { kAuto = 0, kOn = 1, kOff = 2 };
const char* twoDModeName(TwoDMode m);

// LIGHTCC_BIND: kAuto binds where nobody else has (engine/cpu_binding.h says when).
enum class CpuBinding : int { kAuto = 0, kCore = 1, kNone = 2 };

// LIGHTCC_OVERLAP: kAuto starts gradient collectives during the backward pass unless they would
// only take cores from it (engine/overlap_choice.h says when).
enum class Overlap : int { kAuto = 0, kOn = 1, kOff = 2 };

enum class LogLevel : int { kTrace = 0, kDebug = 1, kInfo = 2, kWarning = 3, kError = 4, kFatal = 5 };

// Config's fields by concern; each line names its flag. The flag table (config.cc's specs()) is
// the one place flags are declared and parsed into these.

// Fusion and the negotiation cycle (csrc/engine/fusion_scheduler.h, engine/cycle.h).
struct FusionConfig {
  int64_t threshold_bytes = 128 << 20;            // HOROVOD_FUSION_THRESHOLD
  double cycle_time_ms = 0.0;                     // HOROVOD_CYCLE_TIME
  int64_t cache_capacity = 1024;                  // HOROVOD_CACHE_CAPACITY
  FusionStrategy strategy = FusionStrategy::kSize;  // LIGHT_FUSION_STRATEGY
  int64_t first_bucket_bytes = 1 << 20;           // LIGHT_FUSION_FIRST_BUCKET (order)
  double flush_ms = 5.0;                          // LIGHT_FUSION_FLUSH_MS
  int64_t num_streams = 1;                        // LIGHT_NUM_STREAMS (fused batches in flight at once)
};

// What the engine reports about itself: log, timeline, stall inspector.
struct DiagnosticsConfig {
  LogLevel log_level = LogLevel::kWarning;  // HOROVOD_LOG_LEVEL / LIGHTCC_LOG_LEVEL
  std::string timeline_path;                // HOROVOD_TIMELINE ("" = off, "DYNAMIC")
  bool timeline_mark_cycles = false;        // HOROVOD_TIMELINE_MARK_CYCLES
  bool stall_check_enabled = true;          // !HOROVOD_STALL_CHECK_DISABLE
  double stall_check_seconds = 60.0;        // HOROVOD_STALL_CHECK_TIME_SECONDS
  double stall_shutdown_seconds = 0.0;      // HOROVOD_STALL_SHUTDOWN_TIME_SECONDS
  double peer_check_seconds = -1.0;         // LIGHTCC_PEER_CHECK_S (-1: auto; 0: off)
};

// Ranks of one host: the shared-memory collectives and the direct step.
struct ShmConfig {
  int64_t chunk_bytes = 1 << 20;     // LIGHTCC_SHM_CHUNK_BYTES
  int64_t oneshot_bytes = 256 << 10;  // LIGHTCC_SHM_ONESHOT_BYTES
  int64_t ring_bytes = 1 << 20;      // LIGHTCC_SHM_RING_BYTES
  double spin_us = 50.0;             // LIGHTCC_SPIN_US
  bool direct = true;                // LIGHTCC_DIRECT (engine/direct_allreduce.h)
  double direct_window_us = 5000.0;  // LIGHTCC_DIRECT_WINDOW_US
};

// Links between hosts and the algorithms that run over them.
struct LinkConfig {
  std::string net_plugin;              // LIGHTCC_NET_PLUGIN (path; "" = bundled HARP)
  bool force_ring = false;             // LIGHTCC_FORCE_RING
  int64_t rd_allreduce_bytes = 64 << 10;  // LIGHTCC_RD_ALLREDUCE_BYTES (0 = ring only)
  bool rd_leaders = true;              // LIGHTCC_RD_LEADERS (recursive doubling among host leaders)
};

// GPU data plane (engine/device_executor.h).
struct DeviceConfig {
  std::string nccl_library;       // LIGHTCC_NCCL_LIBRARY ("" = the wheel's, then the loader's)
  bool executor_on_host = false;  // LIGHTCC_DEVICE_EXECUTOR=host (tests)
  int64_t inflight = 2;           // LIGHT_DEVICE_INFLIGHT (engine/device_pacing.h)
};

// Top-k compressed allreduce (docs/topk.md).
struct TopkConfig {
  bool enabled = false;               // LIGHT_TOPK_ALLREDUCE
  int64_t threshold_bytes = 2097152;  // LIGHT_TOPK_THRESHOLD
  double density = 0.01;              // LIGHT_TOPK_DENSITY
  int64_t warmup_steps = 200;         // LIGHT_TOPK_WARMUP_STEPS
  bool warmup_decay = true;           // LIGHT_TOPK_WARMUP=decay (the default) or dense
  double momentum = 0.0;              // LIGHT_TOPK_MOMENTUM (DGC momentum correction)
  bool momentum_set = false;          // LIGHT_TOPK_MOMENTUM was given: it overrides fronts
  int64_t min_dims = 2;               // LIGHT_TOPK_MIN_DIMS (fewer dimensions stay dense)
  double clip = 4.0;                  // LIGHT_TOPK_CLIP (local clipping; 0 = off)
  bool error_feedback = true;         // LIGHT_TOPK_ERROR_FEEDBACK
};

// Autotune (csrc/engine/autotuner.h).
struct AutotuneConfig {
  bool enabled = false;              // HOROVOD_AUTOTUNE
  std::string log;                   // HOROVOD_AUTOTUNE_LOG (CSV on rank 0; "" = none)
  int64_t warmup_samples = 3;        // HOROVOD_AUTOTUNE_WARMUP_SAMPLES
  int64_t steps_per_sample = 10;     // HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE
  int64_t bayes_max_samples = 20;    // HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES
  double gp_noise = 0.8;             // HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE
};

// Where a rank's threads run, and when its gradient collectives start.
struct PlacementConfig {
  std::vector<int> thread_affinity;        // HOROVOD_THREAD_AFFINITY (one core per local rank)
  CpuBinding binding = CpuBinding::kAuto;  // LIGHTCC_BIND
  Overlap overlap = Overlap::kAuto;        // LIGHTCC_OVERLAP
};

// Immutable after parseConfig(); the engine keeps one copy. No other code calls getenv.
struct Config {
  FusionConfig fusion;
  DiagnosticsConfig diagnostics;
  ShmConfig shm;
  LinkConfig links;
  DeviceConfig device;
  TopkConfig topk;
  AutotuneConfig autotune;
  double timeout_seconds = 60.0;     // LIGHTCC_TIMEOUT
  bool dynamic_process_sets = false;  // HOROVOD_DYNAMIC_PROCESS_SETS
  PlacementConfig placement;
  // LightCC's 2D (hierarchical) allreduce.
  TwoDMode two_d = TwoDMode::kAuto;  // LIGHT_2D_ALLREDUCE (or HOROVOD_HIERARCHICAL/TORUS_ALLREDUCE)
  int64_t intra_size = 0;            // LIGHT_INTRA_SIZE (0 = ranks per host)
};

// How long an error's peer check may probe (net/peer_probe.h): LIGHTCC_PEER_CHECK_S, or by default
// a tenth of LIGHTCC_TIMEOUT within 0.2 to 2 s; 0 turns the check off.
inline double peerCheckSeconds(const Config& c) {
  if (c.diagnostics.peer_check_seconds >= 0) return c.diagnostics.peer_check_seconds;
  const double tenth = c.timeout_seconds / 10;
  return tenth < 0.2 ? 0.2 : tenth > 2.0 ? 2.0 : tenth;
}

// One row of the flag table, for documentation (`lightcc._core.flags()`, docs/flags.md).
struct FlagInfo {
  std::string name;
  std::string type;
  std::string default_value;
  std::string doc;
};

// Parses every declared flag from the process environment. A malformed or out-of-range value
// yields InvalidArgument naming the variable, the value and what is accepted. `caller_defaults`
// (flag name -> value) replace the table's defaults for flags the environment leaves unset: a
// front's own settings, such as the torch.distributed group's timeout, which the user's
// environment still overrides.
Status parseConfig(Config* out, const std::map<std::string, std::string>& caller_defaults = {});
const std::vector<FlagInfo>& flagTable();

}  // namespace lightcc
