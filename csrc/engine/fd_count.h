// fd_count: how many file descriptors (and of them sockets) this process holds, from /proc/self/fd.
#pragma once

namespace lightcc {

struct FdCount {
  int fds = -1;      // -1 where /proc/self/fd cannot be read
  int sockets = -1;  // of which sockets (TCP flows, the rendezvous client, listeners)
};

// Reads /proc/self/fd once; cheap enough for stats(), not for the data path.
FdCount countOpenFds();

}  // namespace lightcc
