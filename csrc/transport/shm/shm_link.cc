// ShmLink: framing, streaming copies through the rings, and request bookkeeping.
#include "transport/shm/shm_link.h"

#include <algorithm>
#include <cstring>

namespace lightcc {

// The request record; opaque outside this file. State moves kQueued -> kActive -> kDone; only
// the front of each FIFO is active.
struct LinkRequest {
  bool is_send = false;
  char* buf = nullptr;
  size_t size = 0;       // send: message size; recv: capacity
  size_t header_done = 0;  // bytes of the 8-byte frame header moved
  uint64_t frame_len = 0;  // recv: length from the header
  size_t moved = 0;        // payload bytes moved
  bool done = false;
};

namespace shm {

ShmLink::ShmLink(const HostGroup* group, int peer_li)
    : group_(group),
      peer_li_(peer_li),
      out_(group->ring(peer_li, group->localRank())),
      out_data_(group->ringData(peer_li, group->localRank())),
      in_(group->ring(group->localRank(), peer_li)),
      in_data_(group->ringData(group->localRank(), peer_li)),
      cap_(group->layout().rings.bytes) {}

ShmLink::~ShmLink() = default;

LinkRequest* ShmLink::allocate() {
  if (free_.empty()) {
    pool_.push_back(std::make_unique<LinkRequest>());
    return pool_.back().get();
  }
  LinkRequest* r = free_.back();
  free_.pop_back();
  *r = LinkRequest{};
  return r;
}

void ShmLink::release(LinkRequest* r) { free_.push_back(r); }

Status ShmLink::isend(const void* data, size_t size, LinkRequest** req) {
  if (sends_.size() >= static_cast<size_t>(kMaxLinkRequests)) {
    *req = nullptr;
    return Status::OK();
  }
  LinkRequest* r = allocate();
  r->is_send = true;
  r->buf = static_cast<char*>(const_cast<void*>(data));
  r->size = size;
  sends_.push_back(r);
  *req = r;
  return progressSends();
}

Status ShmLink::irecv(void* data, size_t capacity, LinkRequest** req) {
  if (recvs_.size() >= static_cast<size_t>(kMaxLinkRequests)) {
    *req = nullptr;
    return Status::OK();
  }
  LinkRequest* r = allocate();
  r->buf = static_cast<char*>(data);
  r->size = capacity;
  recvs_.push_back(r);
  *req = r;
  return progressRecvs();
}

namespace {
// Copies n bytes into a ring at logical position pos (wrapping).
void ringWrite(char* ring, size_t cap, uint64_t pos, const char* src, size_t n) {
  size_t off = pos % cap;
  size_t first = std::min(n, cap - off);
  std::memcpy(ring + off, src, first);
  if (n > first) std::memcpy(ring, src + first, n - first);
}
void ringRead(const char* ring, size_t cap, uint64_t pos, char* dst, size_t n) {
  size_t off = pos % cap;
  size_t first = std::min(n, cap - off);
  std::memcpy(dst, ring + off, first);
  if (n > first) std::memcpy(dst + first, ring, n - first);
}
}  // namespace

Status ShmLink::progressSends() {
  bool wrote = false;
  while (!sends_.empty()) {
    LinkRequest* r = sends_.front();
    uint64_t head = out_->head.load(std::memory_order_relaxed);
    uint64_t tail = out_->tail.load(std::memory_order_acquire);
    size_t space = cap_ - static_cast<size_t>(head - tail);
    if (r->header_done < 8) {
      uint64_t len = r->size;
      size_t n = std::min(space, 8 - r->header_done);
      ringWrite(out_data_, cap_, head, reinterpret_cast<const char*>(&len) + r->header_done, n);
      head += n;
      space -= n;
      r->header_done += n;
    }
    if (r->header_done == 8) {
      size_t n = std::min(space, r->size - r->moved);
      if (n > 0) ringWrite(out_data_, cap_, head, r->buf + r->moved, n);
      head += n;
      r->moved += n;
    }
    if (head != out_->head.load(std::memory_order_relaxed)) {
      out_->head.store(head, std::memory_order_release);
      wrote = true;
    }
    if (r->header_done == 8 && r->moved == r->size) {
      r->done = true;
      sends_.pop_front();
    } else {
      break;  // ring full
    }
  }
  if (wrote) group_->wake(peer_li_);
  return Status::OK();
}

Status ShmLink::progressRecvs() {
  bool consumed = false;
  while (!recvs_.empty()) {
    LinkRequest* r = recvs_.front();
    uint64_t tail = in_->tail.load(std::memory_order_relaxed);
    uint64_t head = in_->head.load(std::memory_order_acquire);
    size_t avail = static_cast<size_t>(head - tail);
    if (r->header_done < 8) {
      size_t n = std::min(avail, 8 - r->header_done);
      ringRead(in_data_, cap_, tail, reinterpret_cast<char*>(&r->frame_len) + r->header_done, n);
      tail += n;
      avail -= n;
      r->header_done += n;
      if (r->header_done == 8 && r->frame_len > r->size) {
        return Status::PeerFailure("rank " + std::to_string(peer()) + " sent a " +
                                   std::to_string(r->frame_len) + "-byte message into a " +
                                   std::to_string(r->size) +
                                   "-byte receive (ranks disagree on the operation)");
      }
    }
    if (r->header_done == 8) {
      size_t n = std::min<size_t>(avail, r->frame_len - r->moved);
      if (n > 0) ringRead(in_data_, cap_, tail, r->buf + r->moved, n);
      tail += n;
      r->moved += n;
    }
    if (tail != in_->tail.load(std::memory_order_relaxed)) {
      in_->tail.store(tail, std::memory_order_release);
      consumed = true;
    }
    if (r->header_done == 8 && r->moved == r->frame_len) {
      r->done = true;
      recvs_.pop_front();
    } else {
      break;
    }
  }
  // The producer may be waiting for space.
  if (consumed) group_->wake(peer_li_);
  return Status::OK();
}

Status ShmLink::test(LinkRequest* req, bool* done, size_t* size) {
  LIGHTCC_RETURN_IF_ERROR(req->is_send ? progressSends() : progressRecvs());
  *done = req->done;
  if (req->done) {
    *size = req->is_send ? req->size : req->frame_len;
    release(req);
  }
  return Status::OK();
}

}  // namespace shm
}  // namespace lightcc
