// Exports: ncclNetPlugin_v8 … v12, thin shims over the version-neutral API in api.h.
//
// These five structs are the only symbols the library exports (everything else is hidden).
#include <climits>
#include <cstring>

#include "api.h"
#include "connection.h"
#include "harp/abi_v10.h"
#include "harp/abi_v11.h"
#include "harp/abi_v8.h"
#include "harp/abi_v9.h"

#define HARP_EXPORT extern "C" __attribute__((visibility("default")))

namespace harp {
namespace {

using namespace harp_abi;

int clampInt(size_t v) { return v > static_cast<size_t>(INT_MAX) ? INT_MAX : static_cast<int>(v); }

// Fills the members every property version shares (v8 order; v9+ adds forceFlush, vProps...).
template <typename P>
ncclResult_t fillCommon(int dev, P* props) {
  DeviceProps d;
  ncclResult_t rc = harpGetProps(dev, &d);
  if (rc != ncclSuccess) return rc;
  memset(props, 0, sizeof(*props));
  props->name = d.name;
  props->pciPath = d.pci_path;
  props->guid = d.guid;
  props->ptrSupport = kNcclPtrHost;
  props->regIsGlobal = 0;
  props->speed = d.speed_mbps;
  props->port = d.port;
  props->latency = 0;
  props->maxComms = d.max_comms;
  props->maxRecvs = d.max_recvs;
  props->netDeviceType = kNcclNetDeviceHost;
  props->netDeviceVersion = 0;
  return ncclSuccess;
}

template <typename P>
ncclResult_t fillV9Plus(int dev, P* props) {
  ncclResult_t rc = fillCommon(dev, props);
  if (rc != ncclSuccess) return rc;
  props->forceFlush = 0;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  DeviceProps d;
  harpGetProps(dev, &d);
  props->maxP2pBytes = d.max_p2p_bytes;
  props->maxCollBytes = d.max_p2p_bytes;
  return ncclSuccess;
}

ncclResult_t propsV8(int dev, ncclNetProperties_v8_t* p) { return fillCommon(dev, p); }
ncclResult_t propsV9(int dev, ncclNetProperties_v9_t* p) { return fillV9Plus(dev, p); }
ncclResult_t propsV11(int dev, ncclNetProperties_v11_t* p) {
  ncclResult_t rc = fillV9Plus(dev, p);
  if (rc == ncclSuccess) p->maxMultiRequestSize = 1;
  return rc;
}
ncclResult_t propsV12(int dev, ncclNetProperties_v12_t* p) {
  ncclResult_t rc = fillV9Plus(dev, p);
  if (rc != ncclSuccess) return rc;
  p->maxMultiRequestSize = 1;
  p->railId = -1;
  p->planeId = -1;
  return ncclSuccess;
}

ncclResult_t initV10(ncclDebugLogger_t logger, ncclProfilerCallback_t) { return harpInit(logger); }
ncclResult_t initV11(void** ctx, uint64_t, ncclNetCommConfig_t*, ncclDebugLogger_t logger,
                     ncclProfilerCallback_t) {
  if (ctx == nullptr) return ncclInvalidArgument;
  ncclResult_t rc = harpInit(logger);
  // HARP keeps no per-communicator state: the context is a non-null token.
  static int token;
  *ctx = rc == ncclSuccess ? &token : nullptr;
  return rc;
}
ncclResult_t finalizeV11(void*) { return ncclSuccess; }
ncclResult_t setNetAttrV11(void*, ncclNetAttr_v11_t*) { return ncclSuccess; }

ncclResult_t connectV8(int dev, void* handle, void** comm, ncclNetDeviceHandle_t**) {
  return harpConnect(dev, handle, comm);
}
ncclResult_t connectV10(int dev, ncclNetCommConfig_t*, void* handle, void** comm,
                        ncclNetDeviceHandle_t**) {
  return harpConnect(dev, handle, comm);
}
ncclResult_t connectV11(void*, int dev, void* handle, void** comm, ncclNetDeviceHandle_t**) {
  return harpConnect(dev, handle, comm);
}
ncclResult_t listenV11(void*, int dev, void* handle, void** listen_comm) {
  return harpListen(dev, handle, listen_comm);
}
ncclResult_t acceptAny(void* listen_comm, void** comm, ncclNetDeviceHandle_t**) {
  return harpAccept(listen_comm, comm);
}

ncclResult_t isendV8(void* comm, void* data, int size, int, void* mh, void** req) {
  if (size < 0) return ncclInvalidArgument;
  return harpIsend(comm, data, static_cast<size_t>(size), mh, req);
}
ncclResult_t isendV9(void* comm, void* data, size_t size, int, void* mh, void** req) {
  return harpIsend(comm, data, size, mh, req);
}
ncclResult_t isendV10(void* comm, void* data, size_t size, int, void* mh, void*, void** req) {
  return harpIsend(comm, data, size, mh, req);
}

ncclResult_t irecvV8(void* comm, int n, void** data, int* sizes, int*, void** mh, void** req) {
  if (n != 1 || sizes == nullptr) return harpIrecv(comm, n, data, nullptr, mh, req);
  if (sizes[0] < 0) return ncclInvalidArgument;
  size_t s = static_cast<size_t>(sizes[0]);
  return harpIrecv(comm, n, data, &s, mh, req);
}
ncclResult_t irecvV9(void* comm, int n, void** data, size_t* sizes, int*, void** mh, void** req) {
  return harpIrecv(comm, n, data, sizes, mh, req);
}
ncclResult_t irecvV10(void* comm, int n, void** data, size_t* sizes, int*, void** mh, void**,
                      void** req) {
  return harpIrecv(comm, n, data, sizes, mh, req);
}

ncclResult_t iflushAny(void* comm, int n, void** data, int*, void** mh, void** req) {
  return harpIflush(comm, n, data, mh, req);
}
ncclResult_t testAny(void* req, int* done, int* sizes) {
  size_t s = 0;
  ncclResult_t rc = harpTest(req, done, &s);
  if (rc == ncclSuccess && done != nullptr && *done && sizes != nullptr) *sizes = clampInt(s);
  return rc;
}

}  // namespace
}  // namespace harp

using namespace harp;

HARP_EXPORT const harp_abi::ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = "HARP", .init = harpInit, .devices = harpDevices, .getProperties = propsV8,
    .listen = harpListen, .connect = connectV8, .accept = acceptAny, .regMr = harpRegMr,
    .regMrDmaBuf = nullptr, .deregMr = harpDeregMr, .isend = isendV8, .irecv = irecvV8,
    .iflush = iflushAny, .test = testAny, .closeSend = harpCloseSend, .closeRecv = harpCloseRecv,
    .closeListen = harpCloseListen, .getDeviceMr = nullptr, .irecvConsumed = nullptr};

HARP_EXPORT const harp_abi::ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = "HARP", .init = harpInit, .devices = harpDevices, .getProperties = propsV9,
    .listen = harpListen, .connect = connectV8, .accept = acceptAny, .regMr = harpRegMr,
    .regMrDmaBuf = nullptr, .deregMr = harpDeregMr, .isend = isendV9, .irecv = irecvV9,
    .iflush = iflushAny, .test = testAny, .closeSend = harpCloseSend, .closeRecv = harpCloseRecv,
    .closeListen = harpCloseListen, .getDeviceMr = nullptr, .irecvConsumed = nullptr,
    .makeVDevice = nullptr};

HARP_EXPORT const harp_abi::ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = "HARP", .init = initV10, .devices = harpDevices, .getProperties = propsV9,
    .listen = harpListen, .connect = connectV10, .accept = acceptAny, .regMr = harpRegMr,
    .regMrDmaBuf = nullptr, .deregMr = harpDeregMr, .isend = isendV10, .irecv = irecvV10,
    .iflush = iflushAny, .test = testAny, .closeSend = harpCloseSend, .closeRecv = harpCloseRecv,
    .closeListen = harpCloseListen, .getDeviceMr = nullptr, .irecvConsumed = nullptr,
    .makeVDevice = nullptr};

HARP_EXPORT const harp_abi::ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "HARP", .init = initV11, .devices = harpDevices, .getProperties = propsV11,
    .listen = listenV11, .connect = connectV11, .accept = acceptAny, .regMr = harpRegMr,
    .regMrDmaBuf = nullptr, .deregMr = harpDeregMr, .isend = isendV10, .irecv = irecvV10,
    .iflush = iflushAny, .test = testAny, .closeSend = harpCloseSend, .closeRecv = harpCloseRecv,
    .closeListen = harpCloseListen, .getDeviceMr = nullptr, .irecvConsumed = nullptr,
    .makeVDevice = nullptr, .finalize = finalizeV11, .setNetAttr = setNetAttrV11};

HARP_EXPORT const harp_abi::ncclNet_v12_t ncclNetPlugin_v12 = {
    .name = "HARP", .init = initV11, .devices = harpDevices, .getProperties = propsV12,
    .listen = listenV11, .connect = connectV11, .accept = acceptAny, .regMr = harpRegMr,
    .regMrDmaBuf = nullptr, .deregMr = harpDeregMr, .isend = isendV10, .irecv = irecvV10,
    .iflush = iflushAny, .test = testAny, .closeSend = harpCloseSend, .closeRecv = harpCloseRecv,
    .closeListen = harpCloseListen, .getDeviceMr = nullptr, .irecvConsumed = nullptr,
    .makeVDevice = nullptr, .finalize = finalizeV11, .setNetAttr = setNetAttrV11};
