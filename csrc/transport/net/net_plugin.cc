// NetPlugin: dlopen + per-version adapters (v8..v12) + device selection + stderr logger.
#include "transport/net/net_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "harp/abi_v10.h"
#include "harp/abi_v11.h"
#include "harp/abi_v8.h"
#include "harp/abi_v9.h"

namespace lightcc {
namespace net {
namespace {

using namespace harp_abi;

std::atomic<int> g_log_level{NCCL_LOG_WARN};

void stderrLogger(ncclDebugLogLevel level, unsigned long, const char* file, int line,
                  const char* fmt, ...) {
  if (static_cast<int>(level) > g_log_level.load(std::memory_order_relaxed)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  const char* tag = level == NCCL_LOG_WARN ? "WARN" : level == NCCL_LOG_INFO ? "INFO" : "TRACE";
  fprintf(stderr, "lightcc[%d] net %s %s:%d %s\n", static_cast<int>(getpid()), tag, file, line, msg);
}

const char* resultName(int r) {
  switch (r) {
    case ncclSuccess: return "success";
    case ncclUnhandledCudaError: return "unhandled CUDA error";
    case ncclSystemError: return "system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote error";
    case ncclInProgress: return "in progress";
  }
  return "unknown result";
}

}  // namespace

// The whole plugin's calls, made once by load() and the destructor.
struct PluginCalls {
  std::function<int(ncclDebugLogger_t)> init;
  std::function<int()> finalize = [] { return 0; };
  std::function<int(int*)> devices;
  std::function<int(int, std::string*, size_t*)> props;  // name, maxP2pBytes (0 = unknown)
};

// The per-version adapters: the whole plugin's calls, then those on comms and requests.
struct NetPlugin::Table {
  PluginCalls plugin;
  std::function<int(int, void*, void**)> listen, connect;
  std::function<int(void*, void**)> accept;
  std::function<int(void*, void*, size_t, void**)> regMr;
  std::function<int(void*, void*)> deregMr;
  std::function<int(void*, void*, size_t, void*, void**)> isend, irecv;
  std::function<int(void*, int*, int*)> test;
  std::function<int(void*)> closeSend, closeRecv, closeListen;
};

namespace {

template <typename P>
size_t maxBytesOf(const P& p) { return p.maxP2pBytes; }
size_t maxBytesOf(const ncclNetProperties_v8_t&) { return 0; }

// Members whose signatures every version shares; P is that version's property struct.
template <typename P, typename T>
void bindCommon(const T* n, NetPlugin::Table* t) {
  t->plugin.devices = [n](int* d) { return n->devices(d); };
  t->accept = [n](void* l, void** c) {
    ncclNetDeviceHandle_t* dh = nullptr;
    return n->accept(l, c, &dh);
  };
  t->regMr = [n](void* c, void* d, size_t s, void** m) { return n->regMr(c, d, s, kNcclPtrHost, m); };
  t->deregMr = [n](void* c, void* m) { return n->deregMr(c, m); };
  t->test = [n](void* r, int* d, int* s) { return n->test(r, d, s); };
  t->closeSend = [n](void* c) { return n->closeSend(c); };
  t->closeRecv = [n](void* c) { return n->closeRecv(c); };
  t->closeListen = [n](void* c) { return n->closeListen(c); };
  t->plugin.props = [n](int dev, std::string* name, size_t* max_bytes) {
    P p{};
    int rc = n->getProperties(dev, &p);
    if (rc == 0) {
      *name = p.name != nullptr ? p.name : "";
      *max_bytes = maxBytesOf(p);
    }
    return rc;
  };
}

void bindV8(const ncclNet_v8_t* n, NetPlugin::Table* t) {
  bindCommon<ncclNetProperties_v8_t>(n, t);
  t->plugin.init = [n](ncclDebugLogger_t l) { return n->init(l); };
  t->listen = [n](int d, void* h, void** l) { return n->listen(d, h, l); };
  t->connect = [n](int d, void* h, void** c) {
    ncclNetDeviceHandle_t* dh = nullptr;
    return n->connect(d, h, c, &dh);
  };
  t->isend = [n](void* c, void* d, size_t s, void* m, void** r) {
    return n->isend(c, d, static_cast<int>(s), 0, m, r);
  };
  t->irecv = [n](void* c, void* d, size_t s, void* m, void** r) {
    int size = static_cast<int>(s), tag = 0;
    return n->irecv(c, 1, &d, &size, &tag, &m, r);
  };
}

void bindV9(const ncclNet_v9_t* n, NetPlugin::Table* t) {
  bindCommon<ncclNetProperties_v9_t>(n, t);
  t->plugin.init = [n](ncclDebugLogger_t l) { return n->init(l); };
  t->listen = [n](int d, void* h, void** l) { return n->listen(d, h, l); };
  t->connect = [n](int d, void* h, void** c) {
    ncclNetDeviceHandle_t* dh = nullptr;
    return n->connect(d, h, c, &dh);
  };
  t->isend = [n](void* c, void* d, size_t s, void* m, void** r) { return n->isend(c, d, s, 0, m, r); };
  t->irecv = [n](void* c, void* d, size_t s, void* m, void** r) {
    int tag = 0;
    return n->irecv(c, 1, &d, &s, &tag, &m, r);
  };
}

void bindV10(const ncclNet_v10_t* n, NetPlugin::Table* t) {
  bindCommon<ncclNetProperties_v10_t>(n, t);
  t->plugin.init = [n](ncclDebugLogger_t l) { return n->init(l, nullptr); };
  t->listen = [n](int d, void* h, void** l) { return n->listen(d, h, l); };
  t->connect = [n](int d, void* h, void** c) {
    ncclNetDeviceHandle_t* dh = nullptr;
    ncclNetCommConfig_t cfg{-1};
    return n->connect(d, &cfg, h, c, &dh);
  };
  t->isend = [n](void* c, void* d, size_t s, void* m, void** r) {
    return n->isend(c, d, s, 0, m, nullptr, r);
  };
  t->irecv = [n](void* c, void* d, size_t s, void* m, void** r) {
    int tag = 0;
    void* ph = nullptr;
    return n->irecv(c, 1, &d, &s, &tag, &m, &ph, r);
  };
}

// v11 and v12 share functions; the per-communicator context lives in the table.
template <typename T>
void bindV11(const T* n, NetPlugin::Table* t) {
  bindCommon<typename T::PropsType>(n, t);
  auto ctx = std::make_shared<void*>(nullptr);
  t->plugin.init = [n, ctx](ncclDebugLogger_t l) {
    ncclNetCommConfig_t cfg{-1};
    return n->init(ctx.get(), 0, &cfg, l, nullptr);
  };
  t->plugin.finalize = [n, ctx] { return n->finalize != nullptr ? n->finalize(*ctx) : 0; };
  t->listen = [n, ctx](int d, void* h, void** l) { return n->listen(*ctx, d, h, l); };
  t->connect = [n, ctx](int d, void* h, void** c) {
    ncclNetDeviceHandle_t* dh = nullptr;
    return n->connect(*ctx, d, h, c, &dh);
  };
  t->isend = [n](void* c, void* d, size_t s, void* m, void** r) {
    return n->isend(c, d, s, 0, m, nullptr, r);
  };
  t->irecv = [n](void* c, void* d, size_t s, void* m, void** r) {
    int tag = 0;
    void* ph = nullptr;
    return n->irecv(c, 1, &d, &s, &tag, &m, &ph, r);
  };
}

}  // namespace

Status NetPlugin::toStatus(int result, const std::string& what) {
  if (result == ncclSuccess) return Status::OK();
  std::string msg = what + ": net plugin returned " + std::to_string(result) + " (" +
                    resultName(result) + ")";
  switch (result) {
    case ncclRemoteError: return Status::PeerFailure(msg);
    case ncclSystemError: return Status::SystemError(msg);
    case ncclInvalidUsage: return Status::InvalidArgument(msg);
    default: return Status::Internal(msg);
  }
}

Status NetPlugin::load(const NetPluginOptions& options, std::unique_ptr<NetPlugin>* out) {
  g_log_level.store(options.log_level);
  if (!options.job_secret.empty()) setenv("HARP_JOB_SECRET", options.job_secret.c_str(), 0);
  std::unique_ptr<NetPlugin> p(new NetPlugin());  // private constructor
  p->dl_ = dlopen(options.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (p->dl_ == nullptr) {
    return Status::PreconditionFailed("cannot load net plugin '" + options.path + "': " + dlerror());
  }
  p->table_ = std::make_unique<Table>();
  for (int v = 12; v >= 8 && p->info_.version == 0; --v) {
    void* sym = dlsym(p->dl_, ("ncclNetPlugin_v" + std::to_string(v)).c_str());
    if (sym == nullptr) continue;
    p->info_.version = v;
    if (v == 12) bindV11(static_cast<const ncclNet_v12_t*>(sym), p->table_.get());
    if (v == 11) bindV11(static_cast<const ncclNet_v11_t*>(sym), p->table_.get());
    if (v == 10) bindV10(static_cast<const ncclNet_v10_t*>(sym), p->table_.get());
    if (v == 9) bindV9(static_cast<const ncclNet_v9_t*>(sym), p->table_.get());
    if (v == 8) bindV8(static_cast<const ncclNet_v8_t*>(sym), p->table_.get());
    p->info_.name = static_cast<const ncclNet_v8_t*>(sym)->name;  // name is the first member in all
  }
  p->hook_.set_hook_ = reinterpret_cast<void (*)(void (*)(void*), void*)>(dlsym(p->dl_, "harpSetCompletionHook"));
  if (p->info_.version == 0) {
    return Status::PreconditionFailed("'" + options.path + "' exports no ncclNetPlugin_v8..v12");
  }
  int rc = p->table_->plugin.init(stderrLogger);
  if (rc != 0) return toStatus(rc, "init of net plugin " + p->info_.name + " from " + options.path);
  int ndev = 0;
  rc = p->table_->plugin.devices(&ndev);
  if (rc != 0) return toStatus(rc, "devices of net plugin " + p->info_.name);
  if (ndev < 1) return Status::PreconditionFailed("net plugin " + p->info_.name + " found no device");
  std::string names;
  for (int d = 0; d < ndev; ++d) {
    std::string name;
    size_t max_bytes = 0;
    rc = p->table_->plugin.props(d, &name, &max_bytes);
    if (rc != 0) return toStatus(rc, "getProperties(" + std::to_string(d) + ")");
    names += (d ? ", " : "") + name;
    bool pick = options.device_name.empty() ? d == 0 : name == options.device_name;
    if (!pick) continue;
    p->info_.device = d;
    p->info_.device_name = name;
    size_t limit = static_cast<size_t>(INT_MAX) & ~static_cast<size_t>(4095);
    p->max_message_bytes_ = max_bytes > 0 ? std::min(max_bytes, limit) : limit;
  }
  if (p->info_.device_name.empty()) {
    return Status::InvalidArgument("net plugin " + p->info_.name + " has no device named '" +
                                   options.device_name + "' (it has: " + names + ")");
  }
  *out = std::move(p);
  return Status::OK();
}

NetPlugin::~NetPlugin() {
  if (hook_.installed()) hook_.install(nullptr, nullptr);
  if (table_ != nullptr) table_->plugin.finalize();
  // The library stays mapped: plugins may keep threads (HARP links itself -z nodelete anyway).
}

void NetPlugin::setMaxMessageBytes(size_t n) {
  if (n > 0 && n < max_message_bytes_) max_message_bytes_ = n;
}

bool CompletionHook::install(void (*fn)(void*), void* arg) {
  if (set_hook_ == nullptr) return false;
  set_hook_(fn, arg);
  installed_.store(fn != nullptr, std::memory_order_release);
  return true;
}

int NetPlugin::listen(void* handle, void** lc) { return table_->listen(info_.device, handle, lc); }
int NetPlugin::connect(void* handle, void** sc) { return table_->connect(info_.device, handle, sc); }
int NetPlugin::accept(void* lc, void** rc) { return table_->accept(lc, rc); }
int NetPlugin::regMr(void* c, void* d, size_t s, void** m) { return table_->regMr(c, d, s, m); }
int NetPlugin::deregMr(void* c, void* m) { return table_->deregMr(c, m); }
int NetPlugin::isend(void* c, void* d, size_t s, void* m, void** r) { return table_->isend(c, d, s, m, r); }
int NetPlugin::irecv(void* c, void* d, size_t s, void* m, void** r) { return table_->irecv(c, d, s, m, r); }
int NetPlugin::test(void* r, int* done, int* size) { return table_->test(r, done, size); }
int NetPlugin::closeSend(void* c) { return table_->closeSend(c); }
int NetPlugin::closeRecv(void* c) { return table_->closeRecv(c); }
int NetPlugin::closeListen(void* c) { return table_->closeListen(c); }

}  // namespace net
}  // namespace lightcc
