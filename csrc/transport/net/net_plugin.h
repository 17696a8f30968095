// NetPlugin: loads a NCCL net plugin .so (HARP) and drives it through its exported ABI struct.
//
// DESIGN. The engine reaches other hosts only through a NCCL net plugin, exactly as NCCL does:
// dlopen the library, dlsym the newest ncclNetPlugin_vN we know (12..8), init it with a logger,
// pick a device. NetPlugin hides the per-version signatures behind version-neutral calls that
// return the plugin's ncclResult_t value. Owned by the engine's background thread; the plugin
// itself may run its own threads (HARP does) but every call here comes from that one thread.
// The job secret reaches HARP through the environment: load() sets HARP_JOB_SECRET (unless the
// user already set it) before calling init, since HARP exports nothing but the ABI structs.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace lightcc {
namespace net {

struct NetPluginOptions {
  std::string path;         // e.g. ".../lightcc/lib/libnccl-net-harp.so"
  std::string device_name;  // "" = device 0, else the device whose name matches
  std::string job_secret;   // exported as HARP_JOB_SECRET before init when non-empty
  int log_level = 2;        // NCCL levels: 0 none, 2 warn, 3 info, 5 trace; printed to stderr
};

// Which plugin and device a NetPlugin drives, for messages and logs.
struct NetPluginInfo {
  std::string name;         // the plugin's own name ("HARP")
  int version = 0;          // the ncclNetPlugin_vN it was driven through
  int device = 0;           // the device index picked
  std::string device_name;  // and its name
};

// lightcc's optional extension (harp_plugin/src/completion_hook.h): the plugin calls fn(arg)
// from its threads whenever a chunk of a request completes or a connection fails. NCCL's own
// plugins have none. Found by load(); used from the engine's background thread.
class CompletionHook {
 public:
  bool supported() const { return set_hook_ != nullptr; }
  bool installed() const { return installed_.load(std::memory_order_acquire); }
  // False when unsupported. `arg` must outlive the process's use of the plugin.
  bool install(void (*fn)(void*), void* arg);

 private:
  friend class NetPlugin;  // load() finds harpSetCompletionHook
  void (*set_hook_)(void (*)(void*), void*) = nullptr;
  std::atomic<bool> installed_{false};
};

class NetPlugin {
 public:
  static constexpr size_t kHandleBytes = 128;

  static Status load(const NetPluginOptions& options, std::unique_ptr<NetPlugin>* out);
  ~NetPlugin();
  NetPlugin(const NetPlugin&) = delete;
  NetPlugin& operator=(const NetPlugin&) = delete;

  const NetPluginInfo& info() const { return info_; }
  // Largest single plugin message: test() reports int sizes, and v8 isend takes int.
  size_t maxMessageBytes() const { return max_message_bytes_; }
  // Lowers the part size NetLink splits at (tests use it to exercise splitting cheaply).
  void setMaxMessageBytes(size_t n);

  // Version-neutral calls. Return values are ncclResult_t codes (0 = success).
  int listen(void* handle, void** listen_comm);
  int connect(void* handle, void** send_comm);
  int accept(void* listen_comm, void** recv_comm);
  int regMr(void* comm, void* data, size_t size, void** mhandle);
  int deregMr(void* comm, void* mhandle);
  int isend(void* send_comm, void* data, size_t size, void* mhandle, void** request);
  int irecv(void* recv_comm, void* data, size_t size, void* mhandle, void** request);
  int test(void* request, int* done, int* size);
  int closeSend(void* comm);
  int closeRecv(void* comm);
  int closeListen(void* comm);

  CompletionHook& completionHook() { return hook_; }

  struct Table;  // the per-version adapters, defined in net_plugin.cc

  // Maps a ncclResult_t to a Status with context ("isend to rank 3").
  static Status toStatus(int result, const std::string& what);

 private:
  NetPlugin() = default;
  void* dl_ = nullptr;
  std::unique_ptr<Table> table_;
  NetPluginInfo info_;
  size_t max_message_bytes_ = 0;
  CompletionHook hook_;
};

}  // namespace net
}  // namespace lightcc
