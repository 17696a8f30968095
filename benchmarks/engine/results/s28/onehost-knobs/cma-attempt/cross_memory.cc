// Cross-memory attach: process_vm_readv with its partial transfers and iovec limits handled.
#include "transport/shm/cross_memory.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace lightcc::shm {
namespace {

// Drops the first `n` bytes of the iovecs from index *first on.
void advance(std::vector<iovec>& v, size_t* first, size_t n) {
  while (n > 0 && *first < v.size()) {
    iovec& e = v[*first];
    const size_t take = std::min(n, e.iov_len);
    e.iov_base = static_cast<char*>(e.iov_base) + take;
    e.iov_len -= take;
    n -= take;
    if (e.iov_len == 0) ++*first;
  }
}

size_t remaining(const std::vector<iovec>& v, size_t first) {
  size_t n = 0;
  for (size_t i = first; i < v.size(); ++i) n += v[i].iov_len;
  return n;
}

}  // namespace

Status crossRead(pid_t pid, std::vector<iovec> local, std::vector<iovec> remote, const std::string& peer) {
  size_t li = 0, ri = 0;
  while (li < local.size() && local[li].iov_len == 0) ++li;
  while (ri < remote.size() && remote[ri].iov_len == 0) ++ri;
  if (remaining(local, li) != remaining(remote, ri)) {
    return Status::Internal("cross-memory read from " + peer + ": local and remote sizes differ");
  }
  while (ri < remote.size()) {
    const unsigned long nl = std::min<size_t>(local.size() - li, IOV_MAX);
    const unsigned long nr = std::min<size_t>(remote.size() - ri, IOV_MAX);
    const ssize_t got = process_vm_readv(pid, local.data() + li, nl, remote.data() + ri, nr, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int err = got < 0 ? errno : EFAULT;
      return Status::SystemError("cross-memory read from " + peer + " failed: " + std::strerror(err));
    }
    advance(local, &li, static_cast<size_t>(got));
    advance(remote, &ri, static_cast<size_t>(got));
  }
  return Status::OK();
}

}  // namespace lightcc::shm
