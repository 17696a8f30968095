// CPU binding: why — two ranks that wake each other through futexes get pulled onto one core by
// the scheduler's wake-affine placement and can stay there, halving a host's bandwidth.
#include "engine/cpu_binding.h"

#include <pthread.h>
#include <sched.h>

#include <string>
#include <vector>

namespace lightcc {

Status bindToLocalCores(int local_rank, int local_size) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return Status::SystemError("LIGHTCC_BIND=core: cannot read this process's CPU affinity");
  }
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cores.push_back(c);
  }
  const int n = static_cast<int>(cores.size());
  if (n == 0 || local_size < 1) return Status::OK();
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (local_size >= n) {
    CPU_SET(cores[local_rank % n], &mine);
  } else {
    for (int k = local_rank * n / local_size; k < (local_rank + 1) * n / local_size; ++k) CPU_SET(cores[k], &mine);
  }
  if (pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine) != 0) {
    return Status::SystemError("LIGHTCC_BIND=core: cannot bind local rank " + std::to_string(local_rank) +
                               " to its cores");
  }
  return Status::OK();
}

}  // namespace lightcc
