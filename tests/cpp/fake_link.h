// fake_link.h: in-memory Links between threads of one process, and the host group of such a thread-rank.
//
// Each direction of a pair is a Mailbox: a mutex-guarded FIFO of whole messages. A send copies
// its bytes into the peer's mailbox at once (eager, so it completes in test()'s first call) and
// wakes the peer's host group; receives complete in posting order against arriving messages,
// as Link promises. break_() makes every later call on either end fail, as a dead peer does.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/link.h"
#include "transport/shm/host_group.h"

namespace lightcc::testing {

struct Mailbox {
  std::mutex mu;
  std::deque<std::vector<char>> messages;
  const shm::HostGroup* reader = nullptr;  // woken on every delivery
  bool broken = false;
};

class FakeLink : public Link {
 public:
  FakeLink(int peer, std::shared_ptr<Mailbox> in, std::shared_ptr<Mailbox> out)
      : peer_(peer), in_(std::move(in)), out_(std::move(out)) {}

  Status isend(const void* data, size_t size, LinkRequest** req) override {
    {
      std::lock_guard<std::mutex> lock(out_->mu);
      if (out_->broken) return Status::PeerFailure("fake link to rank " + std::to_string(peer_) + " is broken");
      const char* p = static_cast<const char*>(data);
      out_->messages.emplace_back(p, p + size);
    }
    if (out_->reader != nullptr) out_->reader->wakeSelf();
    *req = make(true, nullptr, size);
    return Status::OK();
  }

  Status irecv(void* data, size_t capacity, LinkRequest** req) override {
    *req = make(false, data, capacity);
    posted_.push_back(reinterpret_cast<Request*>(*req));
    return Status::OK();
  }

  Status test(LinkRequest* req, bool* done, size_t* size) override {
    auto* r = reinterpret_cast<Request*>(req);
    LIGHTCC_RETURN_IF_ERROR(deliver());
    *done = r->done;
    *size = r->size;
    if (r->done) release(r);
    return Status::OK();
  }

  int peer() const override { return peer_; }
  std::string kind() const override { return "fake"; }

 private:
  struct Request {
    bool send;
    void* data;
    size_t size;  // capacity until done, then the bytes moved
    bool done;
  };

  LinkRequest* make(bool send, void* data, size_t size) {
    requests_.push_back(Request{send, data, size, send});
    return reinterpret_cast<LinkRequest*>(&requests_.back());
  }

  void release(Request* r) {
    for (auto it = requests_.begin(); it != requests_.end(); ++it) {
      if (&*it == r) {
        requests_.erase(it);
        return;
      }
    }
  }

  // Matches arrived messages with posted receives, oldest first.
  Status deliver() {
    std::lock_guard<std::mutex> lock(in_->mu);
    if (in_->broken) return Status::PeerFailure("fake link from rank " + std::to_string(peer_) + " is broken");
    while (!posted_.empty() && !in_->messages.empty()) {
      Request* r = posted_.front();
      const std::vector<char>& m = in_->messages.front();
      if (m.size() > r->size) {
        return Status::PeerFailure("rank " + std::to_string(peer_) + " sent " + std::to_string(m.size()) +
                                   " bytes into a " + std::to_string(r->size) + "-byte receive");
      }
      if (!m.empty()) std::memcpy(r->data, m.data(), m.size());
      r->size = m.size();
      r->done = true;
      in_->messages.pop_front();
      posted_.pop_front();
    }
    return Status::OK();
  }

  int peer_;
  std::shared_ptr<Mailbox> in_, out_;
  std::list<Request> requests_;  // stable addresses; released when test() reports done
  std::deque<Request*> posted_;  // receives not yet matched, in posting order
};

// Links for n thread-ranks: links[a][b] is rank a's end towards rank b (null for a == b), and
// mailbox(a, b) carries a's messages to b.
class FakeFabric {
 public:
  explicit FakeFabric(int n) : n_(n), boxes_(static_cast<size_t>(n * n)) {
    for (auto& b : boxes_) b = std::make_shared<Mailbox>();
  }
  std::shared_ptr<Mailbox> mailbox(int from, int to) { return boxes_[static_cast<size_t>(from * n_ + to)]; }
  std::unique_ptr<Link> link(int me, int peer) {
    return std::make_unique<FakeLink>(peer, mailbox(peer, me), mailbox(me, peer));
  }
  // Rank `me`'s host group wakes when any peer sends to it.
  void setReader(int me, const shm::HostGroup* host) {
    for (int from = 0; from < n_; ++from) mailbox(from, me)->reader = host;
  }

 private:
  int n_;
  std::vector<std::shared_ptr<Mailbox>> boxes_;
};

// A one-rank host group in a fresh (already unlinked) shared-memory segment, for a thread-rank
// whose peers are FakeLinks: their deliveries ring its doorbell. Waits fail after 20 s instead of
// hanging the test on a lost message, and poll at least every millisecond.
inline std::unique_ptr<shm::HostGroup> makeThreadHost(const std::string& tag, int rank) {
  static std::atomic<int> serial{0};
  const shm::RankAreaLayout layout = shm::RankAreaLayout::compute(1, 4096, 4096);
  std::unique_ptr<shm::ShmSegment> seg;
  const std::string name = "/lightcc-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(rank) + "-" +
                           std::to_string(serial++);
  if (!shm::ShmSegment::create(name, layout.total, &seg).ok()) return nullptr;
  seg->unlink();
  auto* header = static_cast<shm::RankHeader*>(seg->base());
  header->magic = shm::kRankAreaMagic;
  header->pid = ::getpid();
  header->global_rank = rank;
  std::vector<std::unique_ptr<shm::ShmSegment>> segments;
  segments.push_back(std::move(seg));
  shm::WaitOptions wait;
  wait.spin_us = 0;
  wait.timeout_s = 20;
  wait.max_sleep_us = 1000;
  return std::make_unique<shm::HostGroup>(0, std::vector<int>{rank}, std::move(segments), layout, wait);
}

}  // namespace lightcc::testing
