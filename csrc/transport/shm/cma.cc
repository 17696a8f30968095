// Cross-memory attach: the init probe and a complete process_vm_readv (see the header).
#include "transport/shm/cma.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <string>

namespace lightcc::shm {
namespace {

// process_vm_readv takes at most IOV_MAX entries per side.
constexpr size_t kMaxIov = 1024;

// Moves the cursor (*i, *off) over `n` bytes of `v`, past any empty entries.
void advance(const std::vector<iovec>& v, size_t n, size_t* i, size_t* off) {
  while (*i < v.size()) {
    const size_t step = std::min(n, v[*i].iov_len - *off);
    *off += step;
    n -= step;
    if (*off < v[*i].iov_len) break;
    ++*i;
    *off = 0;
  }
}

}  // namespace

void cmaPublish(RankHeader* own) {
  std::random_device rd;
  own->cma_nonce = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ 1;  // never 0
  own->cma_addr = reinterpret_cast<uintptr_t>(&own->cma_nonce);
  own->cma_ok.store(0, std::memory_order_relaxed);
}

bool cmaProbe(const RankHeader& peer) {
  uint64_t word = 0;
  iovec local{&word, sizeof(word)};
  iovec remote{reinterpret_cast<void*>(peer.cma_addr), sizeof(word)};
  const ssize_t got = ::process_vm_readv(peer.pid, &local, 1, &remote, 1, 0);
  return got == static_cast<ssize_t>(sizeof(word)) && word == peer.cma_nonce;
}

Status cmaRead(int pid, const std::vector<iovec>& local, const std::vector<iovec>& remote) {
  // Cursors into both lists; a short read (the kernel stops at a page it cannot read, or at
  // IOV_MAX) resumes where it stopped.
  size_t li = 0, ri = 0, loff = 0, roff = 0;
  advance(local, 0, &li, &loff);
  advance(remote, 0, &ri, &roff);
  while (li < local.size() && ri < remote.size()) {
    std::vector<iovec> l, r;
    size_t lbytes = 0, rbytes = 0;
    for (size_t i = li; i < local.size() && l.size() < kMaxIov; ++i) {
      const size_t skip = i == li ? loff : 0;
      l.push_back({static_cast<char*>(local[i].iov_base) + skip, local[i].iov_len - skip});
      lbytes += l.back().iov_len;
    }
    for (size_t i = ri; i < remote.size() && r.size() < kMaxIov; ++i) {
      const size_t skip = i == ri ? roff : 0;
      r.push_back({static_cast<char*>(remote[i].iov_base) + skip, remote[i].iov_len - skip});
      rbytes += r.back().iov_len;
    }
    const ssize_t got = ::process_vm_readv(pid, l.data(), l.size(), r.data(), r.size(), 0);
    if (got <= 0) {
      return Status::SystemError("reading " + std::to_string(std::min(lbytes, rbytes)) + " bytes of pid " +
                                 std::to_string(pid) + " (process_vm_readv): " +
                                 (got == 0 ? std::string("nothing read") : std::strerror(errno)));
    }
    advance(local, static_cast<size_t>(got), &li, &loff);
    advance(remote, static_cast<size_t>(got), &ri, &roff);
  }
  return Status::OK();
}

}  // namespace lightcc::shm
