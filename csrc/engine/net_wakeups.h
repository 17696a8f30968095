// NetWakeups: rings this process's registered doorbells when the net plugin completes a chunk.
//
// The plugin's completion hook is one per process and its argument must outlive the plugin, so the
// hook is a static function over a process-wide list of host-group views; each Mesh adds its
// channels' views for its lifetime. A rank waiting on a network request then sleeps until rung
// instead of napping 20-200 us and polling (at 32 emulated ranks on 2 cores those naps' wake-ups
// were the cost of every small dependent step).
#pragma once

#include <cstdint>
#include <memory>

#include "transport/shm/host_group.h"

namespace lightcc {

class NetWakeups {
 public:
  // Keeps `host`'s own doorbell rung on completions until destroyed; `host` must outlive it.
  class Registration {
   public:
    explicit Registration(const shm::HostGroup* host);
    ~Registration();
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    const shm::HostGroup* host_;
  };

  // The plugin's hook: wakes every registered view's own doorbell (any thread).
  static void ring(void* unused);
  // How many times the plugin rang (engine stats: net_wakeups).
  static uint64_t rings();
};

}  // namespace lightcc
