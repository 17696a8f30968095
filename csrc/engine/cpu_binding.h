// CPU binding (LIGHTCC_BIND): each local rank's driving thread gets its own share of cores.
#pragma once

#include <string>

#include "common/config.h"
#include "common/status.h"

namespace lightcc {

// What LIGHTCC_BIND decides for this process, and why (the init log line says it).
struct BindingChoice {
  bool bind = false;
  std::string why;
};

// kCore always binds. kAuto binds only where no one has chosen already and a share exists: two
// or more local ranks, no more of them than the cores this process may use, and those cores are
// every online core. A launcher (mpirun --bind-to, srun --cpu-bind), numactl, taskset or a cpuset
// that narrowed them made its own split; splitting each rank's share again would shrink it.
BindingChoice chooseBinding(CpuBinding mode, int local_size);

// Pins the calling thread (and so every thread it starts afterwards, the engine's included) to
// local rank `local_rank`'s share of the cores this process may use: with c cores and l local
// ranks, cores [i*c/l, (i+1)*c/l), or core i mod c when ranks outnumber cores. `cores` gets
// the share as a list ("0-3" style is not attempted: "0,1,2,3").
Status bindToLocalCores(int local_rank, int local_size, std::string* cores);

}  // namespace lightcc
