// fake_link.h: in-memory Links between threads of one process, and the thread-ranks that use them.
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
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/set_comm.h"
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

// One thread-rank of a set with one member per rank: its host group, its links to every other
// rank (each told the peer's host, "node<m>", as the engine's are) and the SetComm algorithms run on.
struct ThreadRank {
  std::unique_ptr<shm::HostGroup> host;
  std::vector<std::unique_ptr<Link>> links;
  SetComm comm;

  ThreadRank(int rank, int size, FakeFabric& fabric, const std::string& tag) : host(makeThreadHost(tag, rank)) {
    fabric.setReader(rank, host.get());
    comm.me = rank;
    comm.host = host.get();
    comm.local_index.assign(static_cast<size_t>(size), -1);
    comm.local_index[static_cast<size_t>(rank)] = 0;
    comm.links.assign(static_cast<size_t>(size), nullptr);
    for (int m = 0; m < size; ++m) {
      comm.ranks.push_back(m);
      if (m == rank) continue;
      links.push_back(fabric.link(rank, m));
      links.back()->setPeerHost("node" + std::to_string(m));
      comm.links[static_cast<size_t>(m)] = links.back().get();
    }
  }
};

// `size` thread-ranks over one fabric, kept across collectives as an engine keeps its links:
// run() calls body on one thread per rank and returns when every thread has.
class ThreadWorld {
 public:
  ThreadWorld(int size, const std::string& tag) : fabric_(size) {
    for (int r = 0; r < size; ++r) ranks_.push_back(std::make_unique<ThreadRank>(r, size, fabric_, tag));
  }
  int size() const { return static_cast<int>(ranks_.size()); }
  FakeFabric& fabric() { return fabric_; }
  ThreadRank& rank(int r) { return *ranks_[static_cast<size_t>(r)]; }
  // Did every rank get its host group (a shared-memory segment)?
  bool ready() const {
    for (const auto& r : ranks_) {
      if (!r->host) return false;
    }
    return true;
  }
  void run(const std::function<void(ThreadRank&)>& body) {
    std::vector<std::thread> threads;
    for (auto& r : ranks_) {
      ThreadRank* me = r.get();
      threads.emplace_back([me, &body] { body(*me); });
    }
    for (auto& t : threads) t.join();
  }

 private:
  FakeFabric fabric_;
  std::vector<std::unique_ptr<ThreadRank>> ranks_;
};

}  // namespace lightcc::testing
