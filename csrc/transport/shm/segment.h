// ShmSegment: an RAII POSIX shared-memory mapping, created by its owner and mapped by host peers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/status.h"

namespace lightcc::shm {

class ShmSegment {
 public:
  // Creates a fresh segment (O_EXCL) of `size` bytes, zero-filled, and maps it.
  static Status create(const std::string& name, size_t size, std::unique_ptr<ShmSegment>* out);
  // Maps an existing segment made by a peer; fails if it is smaller than `size`.
  static Status open(const std::string& name, size_t size, std::unique_ptr<ShmSegment>* out);

  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Removes the name; the mapping stays valid. Called once every peer has mapped it, so a crash
  // afterwards leaks nothing in /dev/shm.
  void unlink();

  void* base() const { return base_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  ShmSegment(std::string name, void* base, size_t size, bool owner)
      : name_(std::move(name)), base_(base), size_(size), owner_(owner) {}
  std::string name_;
  void* base_;
  size_t size_;
  bool owner_;
  bool linked_ = true;
};

}  // namespace lightcc::shm
