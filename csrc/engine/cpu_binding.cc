// CPU binding: why — two ranks that wake each other through futexes get pulled onto one core by
// the scheduler's wake-affine placement and can stay there, halving a host's bandwidth. Measured
// with DDP over lightcc on 2 cores: steps of 110 ms stretched to 200–280 ms a few times in a
// hundred while unbound, never while bound (docs/tuning.md).
#include "engine/cpu_binding.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <vector>

#include "common/logging.h"

namespace lightcc {

namespace {

std::mutex first_mu;
// The cores this process could use before lightcc first bound it. An engine rebuilt in the same
// process (elastic recovery, a second init) may get another local rank or count: it splits these
// again rather than the share it was given.
std::vector<int> first_cores;

bool currentCores(std::vector<int>* cores) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return false;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cores->push_back(c);
  }
  return true;
}

}  // namespace

bool coresToSplit(std::vector<int>* cores) {
  {
    std::lock_guard<std::mutex> lock(first_mu);
    if (!first_cores.empty()) {
      *cores = first_cores;
      return true;
    }
  }
  return currentCores(cores);
}

BindingChoice decideBinding(CpuBinding mode, int local_size, int usable, long online) {
  if (mode == CpuBinding::kNone) return {false, "LIGHTCC_BIND=none"};
  if (mode == CpuBinding::kCore) return {true, "LIGHTCC_BIND=core"};
  if (local_size < 2) return {false, "auto: the only rank on this host"};
  if (local_size > usable) {
    return {false, "auto: " + std::to_string(local_size) + " local ranks share " + std::to_string(usable) + " cores"};
  }
  if (online > 0 && usable < online) {
    return {false, "auto: this process may use " + std::to_string(usable) + " of " + std::to_string(online) +
                       " cores, a choice made before init; LIGHTCC_BIND=core splits them anyway"};
  }
  return {true, "auto: " + std::to_string(local_size) + " local ranks on " + std::to_string(usable) +
                    " cores that nothing had bound; LIGHTCC_BIND=none leaves them unbound"};
}

std::vector<int> shareOf(const std::vector<int>& cores, int local_rank, int local_size) {
  const int n = static_cast<int>(cores.size());
  std::vector<int> share;
  if (n == 0 || local_size < 1) return share;
  if (local_size >= n) {
    share.push_back(cores[local_rank % n]);
  } else {
    for (int k = local_rank * n / local_size; k < (local_rank + 1) * n / local_size; ++k) share.push_back(cores[k]);
  }
  return share;
}

Status bindToCores(const std::vector<int>& share, const std::vector<int>& cores) {
  if (share.empty()) return Status::OK();
  cpu_set_t mine;
  CPU_ZERO(&mine);
  for (int c : share) CPU_SET(c, &mine);
  if (pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine) != 0) {
    return Status::SystemError("LIGHTCC_BIND: cannot bind this thread to its cores");
  }
  std::lock_guard<std::mutex> lock(first_mu);
  if (first_cores.empty()) first_cores = cores;
  return Status::OK();
}

int coresOfThisThread() {
  std::vector<int> cores;
  return currentCores(&cores) ? static_cast<int>(cores.size()) : 0;
}

Status bindThisRank(CpuBinding mode, int rank, int local_rank, int local_size) {
  std::vector<int> cores;
  if (mode != CpuBinding::kNone && !coresToSplit(&cores)) {
    if (mode == CpuBinding::kCore) {
      return Status::SystemError("LIGHTCC_BIND=core: cannot read this process's CPU affinity (rank " +
                                 std::to_string(rank) + ")");
    }
    LIGHTCC_LOG(kWarning) << "CPU binding: none (auto: this process's CPU affinity is unreadable)";
    return Status::OK();
  }
  const BindingChoice choice =
      decideBinding(mode, local_size, static_cast<int>(cores.size()), sysconf(_SC_NPROCESSORS_ONLN));
  if (!choice.bind) {
    LIGHTCC_LOG(kInfo) << "CPU binding: none (" << choice.why << ")";
    return Status::OK();
  }
  const std::vector<int> share = shareOf(cores, local_rank, local_size);
  Status st = bindToCores(share, cores);
  if (!st.ok()) {
    if (mode == CpuBinding::kCore) return st.withContext("rank " + std::to_string(rank));
    LIGHTCC_LOG(kWarning) << "CPU binding: none (" << st.message() << ")";  // auto: a choice, not a request
    return Status::OK();
  }
  std::string listed;
  for (size_t i = 0; i < share.size(); ++i) listed += (i ? "," : "") + std::to_string(share[i]);
  LIGHTCC_LOG(kInfo) << "CPU binding: local rank " << local_rank << " of " << local_size << " on cores "
                     << listed << " (" << choice.why << ")";
  return Status::OK();
}

}  // namespace lightcc
