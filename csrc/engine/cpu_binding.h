// CPU binding (LIGHTCC_BIND=core): each local rank's driving thread gets its own share of cores.
#pragma once

#include "common/status.h"

namespace lightcc {

// Pins the calling thread (and so every thread it starts afterwards, the engine's included) to
// local rank `local_rank`'s share of the cores this process may use: with c cores and l local
// ranks, cores [i*c/l, (i+1)*c/l), or core i mod c when ranks outnumber cores.
Status bindToLocalCores(int local_rank, int local_size);

}  // namespace lightcc
