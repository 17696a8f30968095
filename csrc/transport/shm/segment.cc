// ShmSegment: shm_open/ftruncate/mmap with errors that name the segment and the syscall.
#include "transport/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace lightcc::shm {
namespace {
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

Status ShmSegment::create(const std::string& name, size_t size, std::unique_ptr<ShmSegment>* out) {
  FdGuard fd{::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)};
  if (fd.fd < 0) return Status::SystemError(errnoMessage("shm_open(" + name + ", O_CREAT)", errno));
  if (::ftruncate(fd.fd, static_cast<off_t>(size)) != 0) {
    int err = errno;
    ::shm_unlink(name.c_str());
    return Status::SystemError(errnoMessage("ftruncate(" + name + ", " + std::to_string(size) +
                                                ") (is /dev/shm large enough?)",
                                            err));
  }
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    ::shm_unlink(name.c_str());
    return Status::SystemError(errnoMessage("mmap(" + name + ")", err));
  }
  out->reset(new ShmSegment(name, base, size, true));
  return Status::OK();
}

Status ShmSegment::open(const std::string& name, size_t size, std::unique_ptr<ShmSegment>* out) {
  FdGuard fd{::shm_open(name.c_str(), O_RDWR, 0600)};
  if (fd.fd < 0) return Status::SystemError(errnoMessage("shm_open(" + name + ")", errno));
  struct stat st;
  if (::fstat(fd.fd, &st) != 0) return Status::SystemError(errnoMessage("fstat(" + name + ")", errno));
  if (static_cast<size_t>(st.st_size) < size) {
    return Status::PeerFailure("shared-memory segment " + name + " has " +
                               std::to_string(st.st_size) + " bytes, expected at least " +
                               std::to_string(size) + " (ranks started with different settings?)");
  }
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0);
  if (base == MAP_FAILED) return Status::SystemError(errnoMessage("mmap(" + name + ")", errno));
  out->reset(new ShmSegment(name, base, size, false));
  (*out)->linked_ = false;  // only the owner unlinks
  return Status::OK();
}

void ShmSegment::unlink() {
  if (owner_ && linked_) {
    ::shm_unlink(name_.c_str());
    linked_ = false;
  }
}

ShmSegment::~ShmSegment() {
  unlink();
  if (base_ != nullptr) ::munmap(base_, size_);
}

}  // namespace lightcc::shm
