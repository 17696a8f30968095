// CPU binding (LIGHTCC_BIND): each local rank's driving thread gets its own share of cores.
#pragma once

#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace lightcc {

// What LIGHTCC_BIND decides for this process, and why (the init log line says it).
struct BindingChoice {
  bool bind = false;
  std::string why;
};

// kCore always binds. kAuto binds only where no one has chosen already and a share exists: two
// or more local ranks, no more of them than the `usable` cores, and those are every `online`
// core. A launcher (mpirun --bind-to, srun --cpu-bind), numactl, taskset or a cpuset that
// narrowed them made its own split; splitting each rank's share again would shrink it.
BindingChoice decideBinding(CpuBinding mode, int local_size, int usable, long online);

// The cores this process may use: before lightcc first bound it, when it has (an engine rebuilt
// in the same process splits those again for its new local rank). False when unreadable.
bool coresToSplit(std::vector<int>* cores);

// Local rank i's share of `cores` among `local_size`: with c cores, [i*c/l, (i+1)*c/l), or core
// i mod c when ranks outnumber cores.
std::vector<int> shareOf(const std::vector<int>& cores, int local_rank, int local_size);

// Pins the calling thread (and so every thread it starts afterwards, the engine's included) to
// `share`, and remembers `cores` (what it was split from) for a later engine in this process.
Status bindToCores(const std::vector<int>& share, const std::vector<int>& cores);

// The cores the calling thread may run on now (after any binding); 0 when unreadable.
int coresOfThisThread();

// LIGHTCC_BIND at init, on the calling thread before the engine's threads start (they inherit
// it): decides, binds and logs the choice. Errors only for `core`; auto falls back to no binding.
Status bindThisRank(CpuBinding mode, int rank, int local_rank, int local_size);

}  // namespace lightcc
