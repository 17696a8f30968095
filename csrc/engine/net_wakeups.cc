// NetWakeups: the process-wide list of doorbells the net plugin's completion hook rings.
#include "engine/net_wakeups.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

namespace lightcc {
namespace {

struct Registry {
  std::atomic<uint64_t> rings{0};
  std::mutex mu;  // held while ringing, so a view is never rung after its Registration is gone
  std::vector<const shm::HostGroup*> hosts;
};

Registry& registry() {
  // The plugin's threads stop (NetPlugin's destructor unhooks and finalizes it) before statics die.
  static Registry r;
  return r;
}

}  // namespace

NetWakeups::Registration::Registration(const shm::HostGroup* host) : host_(host) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.hosts.push_back(host_);
}

NetWakeups::Registration::~Registration() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = std::find(r.hosts.begin(), r.hosts.end(), host_);
  if (it != r.hosts.end()) r.hosts.erase(it);
}

void NetWakeups::ring(void* /*unused*/) {
  Registry& r = registry();
  r.rings.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(r.mu);
  for (const shm::HostGroup* h : r.hosts) h->wakeSelf();
}

uint64_t NetWakeups::rings() { return registry().rings.load(std::memory_order_relaxed); }

}  // namespace lightcc
