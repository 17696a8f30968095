// NetApi: per-version adapters from the exported ncclNetPlugin_vN structs to one interface.
#include "plugin_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <memory>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "harp/abi_v10.h"
#include "harp/abi_v11.h"
#include "harp/abi_v8.h"
#include "harp/abi_v9.h"

namespace harp_tools {
namespace {

using namespace harp_abi;

template <typename P>
void copyProps(const P& p, NetProps* out) {
  out->name = p.name != nullptr ? p.name : "";
  out->has_pci = p.pciPath != nullptr;
  out->ptr_support = p.ptrSupport;
  out->speed = p.speed;
  out->max_recvs = p.maxRecvs;
  out->max_comms = p.maxComms;
}

// Members with identical signatures in every version.
template <typename T>
void common(const T* n, NetApi* a) {
  a->name = n->name;
  a->devices = [n](int* d) { return n->devices(d); };
  a->accept = [n](void* l, void** c) {
    ncclNetDeviceHandle_t* dh = nullptr;
    return n->accept(l, c, &dh);
  };
  a->regMr = [n](void* c, void* d, size_t s, int t, void** m) { return n->regMr(c, d, s, t, m); };
  a->deregMr = [n](void* c, void* m) { return n->deregMr(c, m); };
  a->iflush = [n](void* c, int k, void** d, int* s, void** m, void** r) {
    return n->iflush(c, k, d, s, m, r);
  };
  a->test = [n](void* r, int* d, int* s) { return n->test(r, d, s); };
  a->closeSend = [n](void* c) { return n->closeSend(c); };
  a->closeRecv = [n](void* c) { return n->closeRecv(c); };
  a->closeListen = [n](void* c) { return n->closeListen(c); };
  a->finalize = [] { return 0; };
}

}  // namespace

void* harpToolsOpen(const std::string& path, std::string* err) {
  void* dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) *err = dlerror();
  return dl;
}

std::vector<int> harpToolsVersions(void* dl) {
  std::vector<int> v;
  for (int ver = 12; ver >= 8; --ver) {
    std::string sym = "ncclNetPlugin_v" + std::to_string(ver);
    if (dlsym(dl, sym.c_str()) != nullptr) v.push_back(ver);
  }
  return v;
}

namespace {

// getProperties from v9 on, whose properties also carry maxP2pBytes.
template <typename Props, typename Net>
void bindPropsWithP2p(const Net* n, NetApi* a) {
  a->getProperties = [n](int d, NetProps* out) {
    Props pr{};
    Res rc = n->getProperties(d, &pr);
    if (rc == 0) copyProps(pr, out), out->max_p2p_bytes = pr.maxP2pBytes;
    return rc;
  };
}

// listen before v11, which has no context from init yet.
template <typename Net>
void bindListenWithoutCtx(const Net* n, NetApi* a) {
  a->listen = [n](int d, void* h, void** l) { return n->listen(d, h, l); };
}

// isend and irecv from v10 on: size_t sizes plus profiler handles, which the tools do not use.
template <typename Net>
void bindSendRecvWithPhandles(const Net* n, NetApi* a) {
  a->isend = [n](void* c, void* d, size_t s, void* m, void** r) {
    return n->isend(c, d, s, 0, m, nullptr, r);
  };
  a->irecv = [n](void* c, int k, void** d, size_t* s, void** m, void** r) {
    std::vector<int> tags(static_cast<size_t>(k > 0 ? k : 1), 0);
    std::vector<void*> ph(tags.size(), nullptr);
    return n->irecv(c, k, d, s, tags.data(), m, ph.data(), r);
  };
}

// One binder per ABI version: NetApi's calls forwarded to that version's struct.
void bindV8(const ncclNet_v8_t* n, NetApi* a) {
  common(n, a);
  bindListenWithoutCtx(n, a);
  a->init = [n](ncclDebugLogger_t l) { return n->init(l); };
  a->getProperties = [n](int d, NetProps* out) {
    ncclNetProperties_v8_t pr{};
    Res rc = n->getProperties(d, &pr);
    if (rc == 0) copyProps(pr, out);
    return rc;
  };
  a->connect = [n](int d, void* h, void** c) {
    ncclNetDeviceHandle_t* dh = nullptr;
    return n->connect(d, h, c, &dh);
  };
  a->isend = [n](void* c, void* d, size_t s, void* m, void** r) {
    return n->isend(c, d, static_cast<int>(s), 0, m, r);
  };
  a->irecv = [n](void* c, int k, void** d, size_t* s, void** m, void** r) {
    std::vector<int> sizes(static_cast<size_t>(k > 0 ? k : 1));
    std::vector<int> tags(sizes.size(), 0);
    for (int i = 0; i < k; ++i) sizes[static_cast<size_t>(i)] = static_cast<int>(s[i]);
    return n->irecv(c, k, d, sizes.data(), tags.data(), m, r);
  };
}

void bindV9(const ncclNet_v9_t* n, NetApi* a) {
  common(n, a);
  bindListenWithoutCtx(n, a);
  bindPropsWithP2p<ncclNetProperties_v9_t>(n, a);
  a->init = [n](ncclDebugLogger_t l) { return n->init(l); };
  a->connect = [n](int d, void* h, void** c) {
    ncclNetDeviceHandle_t* dh = nullptr;
    return n->connect(d, h, c, &dh);
  };
  a->isend = [n](void* c, void* d, size_t s, void* m, void** r) { return n->isend(c, d, s, 0, m, r); };
  a->irecv = [n](void* c, int k, void** d, size_t* s, void** m, void** r) {
    std::vector<int> tags(static_cast<size_t>(k > 0 ? k : 1), 0);
    return n->irecv(c, k, d, s, tags.data(), m, r);
  };
}

void bindV10(const ncclNet_v10_t* n, NetApi* a) {
  common(n, a);
  bindListenWithoutCtx(n, a);
  bindPropsWithP2p<ncclNetProperties_v10_t>(n, a);
  bindSendRecvWithPhandles(n, a);
  a->init = [n](ncclDebugLogger_t l) { return n->init(l, nullptr); };
  a->connect = [n](int d, void* h, void** c) {
    ncclNetDeviceHandle_t* dh = nullptr;
    ncclNetCommConfig_t cfg{-1};
    return n->connect(d, &cfg, h, c, &dh);
  };
}

// v11 and v12 share their calls (a context from init, passed to listen and connect).
template <typename Net>
void bindV11(const Net* n, NetApi* a) {
  common(n, a);
  bindPropsWithP2p<typename Net::PropsType>(n, a);
  bindSendRecvWithPhandles(n, a);
  auto ctx = std::make_shared<void*>(nullptr);
  a->init = [n, ctx](ncclDebugLogger_t l) {
    ncclNetCommConfig_t cfg{-1};
    return n->init(ctx.get(), 0, &cfg, l, nullptr);
  };
  a->finalize = [n, ctx] { return n->finalize(*ctx); };
  a->listen = [n, ctx](int d, void* h, void** l) { return n->listen(*ctx, d, h, l); };
  a->connect = [n, ctx](int d, void* h, void** c) {
    ncclNetDeviceHandle_t* dh = nullptr;
    return n->connect(*ctx, d, h, c, &dh);
  };
}

}  // namespace

bool harpToolsLoad(void* dl, int version, NetApi* a) {
  std::string sym = "ncclNetPlugin_v" + std::to_string(version);
  void* p = dlsym(dl, sym.c_str());
  if (p == nullptr) return false;
  a->version = version;
  switch (version) {
    case 8: bindV8(static_cast<const ncclNet_v8_t*>(p), a); return true;
    case 9: bindV9(static_cast<const ncclNet_v9_t*>(p), a); return true;
    case 10: bindV10(static_cast<const ncclNet_v10_t*>(p), a); return true;
    case 11: bindV11(static_cast<const ncclNet_v11_t*>(p), a); return true;
    case 12: bindV11(static_cast<const ncclNet_v12_t*>(p), a); return true;
    default: return false;
  }
}

void harpToolsLogger(ncclDebugLogLevel level, unsigned long, const char* file, int line,
                     const char* fmt, ...) {
  static const bool verbose = getenv("HARP_TEST_VERBOSE") != nullptr;
  if (!verbose && level > NCCL_LOG_WARN) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "[pid %d] NCCL %s %s:%d %s\n", static_cast<int>(getpid()),
          level == NCCL_LOG_WARN ? "WARN" : "INFO", file, line, msg);
}

}  // namespace harp_tools
