// IoVec: a fused operation's tensors seen as one virtual byte range, inputs and outputs apart.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace lightcc {

struct IoSegment {
  const char* in;
  char* out;
  size_t bytes;
};

// Lets the shared-memory algorithms copy straight between user tensors and staging, so fusing
// many small tensors needs no separate fusion buffer.
class IoVec {
 public:
  void add(const void* in, void* out, size_t bytes) {
    if (bytes == 0) return;
    segs_.push_back({static_cast<const char*>(in), static_cast<char*>(out), bytes});
    starts_.push_back(total_);
    total_ += bytes;
  }
  size_t total() const { return total_; }
  bool single() const { return segs_.size() == 1; }
  const std::vector<IoSegment>& segments() const { return segs_; }

  // Calls f(in, out, len, done) for each piece of the virtual range [off, off+n) that lies in
  // one tensor; `done` counts the bytes before the piece.
  template <typename F>
  void forEachPiece(size_t off, size_t n, F&& f) const {
    walk(off, n, [&](const IoSegment& s, size_t so, size_t len, size_t done) { f(s.in + so, s.out + so, len, done); });
  }
  // Copies input bytes [off, off+n) of the virtual range into dst.
  void gather(size_t off, size_t n, char* dst) const {
    walk(off, n, [&](const IoSegment& s, size_t so, size_t len, size_t done) {
      std::memcpy(dst + done, s.in + so, len);
    });
  }
  // Copies src into output bytes [off, off+n).
  void scatter(size_t off, size_t n, const char* src) const {
    walk(off, n, [&](const IoSegment& s, size_t so, size_t len, size_t done) {
      std::memcpy(s.out + so, src + done, len);
    });
  }
  // For algorithms that work in place on one buffer: the single output itself (its input copied
  // in when apart), or `scratch` holding every input gathered. unstage() writes it back out.
  char* stage(std::vector<char>& scratch) const {
    if (single()) {
      const IoSegment& s = segs_.front();
      if (s.in != s.out) std::memcpy(s.out, s.in, s.bytes);
      return s.out;
    }
    if (scratch.size() < total_) scratch.resize(total_);
    gather(0, total_, scratch.data());
    return scratch.data();
  }
  void unstage(const char* buf) const {
    if (!single()) scatter(0, total_, buf);
  }

 private:
  template <typename F>
  void walk(size_t off, size_t n, F&& f) const {
    if (n == 0) return;
    size_t i = std::upper_bound(starts_.begin(), starts_.end(), off) - starts_.begin() - 1;
    size_t done = 0;
    while (done < n) {
      const IoSegment& s = segs_[i];
      size_t so = off + done - starts_[i];
      size_t len = std::min(s.bytes - so, n - done);
      f(s, so, len, done);
      done += len;
      ++i;
    }
  }
  std::vector<IoSegment> segs_;
  std::vector<size_t> starts_;
  size_t total_ = 0;
};

}  // namespace lightcc
