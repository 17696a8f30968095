// NetLink: message splitting, in-order posting with back-pressure, and a registration cache.
#include "transport/net/net_link.h"

#include <sched.h>

#include <algorithm>

namespace lightcc {
namespace net {
namespace {
constexpr int kMrCacheEntries = 48;  // > kMaxLinkRequests, so an idle entry can always go
}  // namespace

struct NetLink::Request {
  struct Part {
    void* preq;
    size_t len;
  };
  bool in_use = false;
  char* data = nullptr;
  size_t size = 0;         // send: message bytes; recv: capacity
  size_t next_off = 0;     // bytes covered by posted parts
  bool all_posted = false; // send: the short last part is posted; recv: the request has ended
  bool ended = false;      // recv: a short part completed
  size_t bytes = 0;        // bytes of completed parts
  std::deque<Part> parts;  // posted, not yet completed, oldest first
  MrEntry* mr = nullptr;
};

struct NetLink::Direction {
  bool is_send = false;
  void* comm = nullptr;
  Request reqs[kMaxLinkRequests];
  std::deque<Request*> order;  // not yet completed, in posting order
  MrEntry cache[kMrCacheEntries] = {};
};

NetLink::NetLink(NetPlugin* plugin, int peer, void* send_comm, void* recv_comm, std::string address,
                 std::shared_ptr<NetListener> listener)
    : plugin_(plugin), peer_(peer), address_(std::move(address)), listener_(std::move(listener)),
      send_(std::make_unique<Direction>()), recv_(std::make_unique<Direction>()) {
  send_->is_send = true;
  send_->comm = send_comm;
  recv_->comm = recv_comm;
}

NetLink::~NetLink() {
  for (Direction* d : {send_.get(), recv_.get()}) {
    for (MrEntry& e : d->cache) {
      if (e.mhandle != nullptr) plugin_->deregMr(d->comm, e.mhandle);
    }
  }
  plugin_->closeSend(send_->comm);
  plugin_->closeRecv(recv_->comm);
}

NetListener::~NetListener() {
  if (comm != nullptr) plugin->closeListen(comm);
}

namespace {

// Finds a cached registration covering [p, p+n) or registers that range, evicting the least
// recently used idle entry.
template <typename Entry>
Entry* acquire(NetPlugin* plugin, Entry* cache, int n_entries, void* comm, char* p, size_t n,
               uint64_t now, Status* st) {
  Entry* victim = nullptr;
  for (int i = 0; i < n_entries; ++i) {
    Entry& e = cache[i];
    if (e.mhandle != nullptr && p >= e.base && p + n <= e.base + e.size) {
      ++e.in_use;
      e.last_use = now;
      return &e;
    }
    if (e.in_use == 0 && (victim == nullptr || e.mhandle == nullptr ||
                          (victim->mhandle != nullptr && e.last_use < victim->last_use))) {
      victim = &e;
    }
  }
  if (victim == nullptr) {
    *st = Status::Internal("registration cache full of in-flight buffers");
    return nullptr;
  }
  if (victim->mhandle != nullptr) plugin->deregMr(comm, victim->mhandle);
  victim->mhandle = nullptr;
  void* mh = nullptr;
  int rc = plugin->regMr(comm, p, n, &mh);
  if (rc != 0) {
    *st = NetPlugin::toStatus(rc, "regMr of " + std::to_string(n) + " bytes");
    return nullptr;
  }
  *victim = {p, n, mh, 1, now};
  return victim;
}

}  // namespace

Status NetLink::post(Direction& d, Request& r, bool* stalled) {
  const size_t m = plugin_->maxMessageBytes();
  *stalled = false;
  while (!r.all_posted) {
    if (!d.is_send && !r.parts.empty()) return Status::OK();  // large receive: one part at a time
    size_t left = r.size - r.next_off;
    size_t len = std::min(left, m);
    bool last = d.is_send ? left < m : r.size < m;
    void* mh = r.mr != nullptr ? r.mr->mhandle : nullptr;
    void* preq = nullptr;
    int rc = d.is_send ? plugin_->isend(d.comm, r.data + r.next_off, len, mh, &preq)
                       : plugin_->irecv(d.comm, r.data + r.next_off, len, mh, &preq);
    if (rc != 0) {
      return NetPlugin::toStatus(rc, std::string(d.is_send ? "isend to " : "irecv from ") + describePeer());
    }
    if (preq == nullptr) {
      *stalled = true;  // plugin back-pressure: retry on the next test()
      return Status::OK();
    }
    r.parts.push_back({preq, len});
    r.next_off += len;
    if (last) r.all_posted = true;
  }
  return Status::OK();
}

Status NetLink::pump(Direction& d) {
  for (Request* r : d.order) {
    bool stalled = false;
    LIGHTCC_RETURN_IF_ERROR(post(d, *r, &stalled));
    if (stalled || !r->all_posted) return Status::OK();  // later requests must wait their turn
  }
  return Status::OK();
}

Status NetLink::isend(const void* data, size_t size, LinkRequest** req) {
  *req = nullptr;
  Request* r = nullptr;
  for (Request& x : send_->reqs) {
    if (!x.in_use) { r = &x; break; }
  }
  if (r == nullptr) return Status::OK();
  *r = Request();
  r->in_use = true;
  r->data = static_cast<char*>(const_cast<void*>(data));
  r->size = size;
  Status st;
  if (size > 0) {
    r->mr = acquire(plugin_, send_->cache, kMrCacheEntries, send_->comm, r->data, size, ++clock_, &st);
    if (r->mr == nullptr) {
      r->in_use = false;
      return st.withContext("isend to " + describePeer());
    }
  }
  send_->order.push_back(r);
  *req = reinterpret_cast<LinkRequest*>(r);
  return pump(*send_);
}

Status NetLink::irecv(void* data, size_t capacity, LinkRequest** req) {
  *req = nullptr;
  Request* r = nullptr;
  for (Request& x : recv_->reqs) {
    if (!x.in_use) { r = &x; break; }
  }
  if (r == nullptr) return Status::OK();
  *r = Request();
  r->in_use = true;
  r->data = static_cast<char*>(data);
  r->size = capacity;
  Status st;
  if (capacity > 0) {
    r->mr = acquire(plugin_, recv_->cache, kMrCacheEntries, recv_->comm, r->data, capacity, ++clock_, &st);
    if (r->mr == nullptr) {
      r->in_use = false;
      return st.withContext("irecv from " + describePeer());
    }
  }
  recv_->order.push_back(r);
  *req = reinterpret_cast<LinkRequest*>(r);
  return pump(*recv_);
}

Status NetLink::test(LinkRequest* req, bool* done, size_t* size) {
  auto* r = reinterpret_cast<Request*>(req);
  *done = false;
  bool is_send = r >= send_->reqs && r < send_->reqs + kMaxLinkRequests;
  bool is_recv = r >= recv_->reqs && r < recv_->reqs + kMaxLinkRequests;
  if ((!is_send && !is_recv) || !r->in_use) {
    return Status::Internal("test on a request that is not in flight on the link to " + describePeer());
  }
  Direction& d = is_send ? *send_ : *recv_;
  const size_t m = plugin_->maxMessageBytes();
  LIGHTCC_RETURN_IF_ERROR(pump(d));
  while (!r->parts.empty()) {
    int part_done = 0, part_size = 0;
    int rc = plugin_->test(r->parts.front().preq, &part_done, &part_size);
    if (rc != 0) {
      return NetPlugin::toStatus(rc, std::string(is_send ? "send to " : "receive from ") + describePeer());
    }
    if (!part_done) break;
    r->parts.pop_front();
    r->bytes += static_cast<size_t>(part_size);
    if (!is_send && static_cast<size_t>(part_size) < m) {
      r->ended = true;
      r->all_posted = true;
    } else if (!is_send) {
      r->next_off = r->bytes;
      if (r->bytes > r->size) return Status::Internal("receive overran its buffer");
    }
    LIGHTCC_RETURN_IF_ERROR(pump(d));
  }
  bool finished = r->parts.empty() && (is_send ? r->all_posted : r->ended);
  if (!finished) {
    // The plugin moves the bytes on its own threads, and the engine polls test() in a spin loop
    // before it sleeps. Without yielding, that spin holds the core the plugin's instance thread
    // needs to finish this very request (on a 2-core box a 1 ms spin made every collective take
    // 10 ms). NCCL's proxy yields the same way when a progress pass finds nothing done.
    sched_yield();
    return Status::OK();
  }
  if (r->mr != nullptr) --r->mr->in_use;
  d.order.erase(std::find(d.order.begin(), d.order.end(), r));
  r->in_use = false;
  *done = true;
  *size = r->bytes;
  return pump(d);
}

}  // namespace net
}  // namespace lightcc
