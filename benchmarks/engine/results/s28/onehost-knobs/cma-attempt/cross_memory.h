// Cross-memory attach: copies a host peer's memory into this process in one kernel copy.
//
// DESIGN. Shared-memory collectives stage every byte through the host group's segments: the
// owner copies in, the peers copy out. process_vm_readv (Linux 3.2+) lets a peer read the
// owner's own buffers instead, given their addresses and the owner's pid, so a large allreduce
// moves each byte once per reader (the approach MPI implementations take for large messages
// within a host). The kernel may refuse it (ptrace policy such as Yama's ptrace_scope, a seccomp
// filter, ranks in different pid namespaces): callers probe it once and keep staging then.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"

namespace lightcc::shm {

// Reads `remote` (addresses in process `pid`) into `local`; both cover the same byte count.
// Transfers the kernel cuts short are resumed. `peer` names the peer in errors.
Status crossRead(pid_t pid, std::vector<iovec> local, std::vector<iovec> remote, const std::string& peer);

}  // namespace lightcc::shm
