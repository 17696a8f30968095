// fd_count: one pass over /proc/self/fd, telling sockets apart by their link target.
#include "engine/fd_count.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace lightcc {

FdCount countOpenFds() {
  FdCount c;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return c;
  c.fds = 0;
  c.sockets = 0;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.' || std::atoi(e->d_name) == own) continue;
    ++c.fds;
    char target[64] = {0};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
    if (n > 0 && std::strncmp(target, "socket:", 7) == 0) ++c.sockets;
  }
  ::closedir(dir);
  return c;
}

}  // namespace lightcc
