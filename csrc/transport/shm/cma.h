// Cross-memory attach: reading a host peer's memory with one kernel copy (process_vm_readv).
//
// DESIGN. The shared-memory collectives stage every byte a peer reads: the owner copies it into
// its staging area, the peer copies it out (or reduces from it). process_vm_readv lets a rank
// read a peer's tensor directly, one copy instead of two and no staging windows. It needs the
// kernel's ptrace permission for the peer (same user; Yama's ptrace_scope, seccomp profiles and
// separate PID namespaces may refuse it), so at init each rank probes every host peer — reads
// the peer's random word at the address the peer published and compares — and publishes its
// verdict; a collective uses it only where every member's verdict is yes (the same shared
// verdicts on every rank), else it stages as before. LIGHTCC_SHM_CMA=0 turns it off.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "transport/shm/rank_area.h"

namespace lightcc::shm {

constexpr uint32_t kCmaOk = 1;
constexpr uint32_t kCmaNo = 2;

// Fills the owner's word and address (before its segment is published).
void cmaPublish(RankHeader* own);
// Whether this process can read `peer`'s published word through its pid.
bool cmaProbe(const RankHeader& peer);
// Reads the remote ranges of process `pid` into the local ranges (same total length), all of it
// or an error naming what failed.
Status cmaRead(int pid, const std::vector<iovec>& local, const std::vector<iovec>& remote);

}  // namespace lightcc::shm
