// NCCL net plugin ABI: result codes, constants and callback types shared by every version.
//
// Written from the facts in shared/reference/nccl-net-abi.md. Everything lives in namespace
// harp_abi so a translation unit may also include NCCL's own headers without clashes. Layouts
// must match NCCL's C structs exactly: plain data and function pointers only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace harp_abi {

// Same numeric values and meanings as NCCL's ncclResult_t.
enum ncclResult_t : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,     // kernel / network failure
  ncclInternalError = 3,   // API misuse
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,    // user / configuration error
  ncclRemoteError = 6,     // the peer failed or closed
  ncclInProgress = 7,
};

enum ncclDebugLogLevel : int {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5,
};

constexpr unsigned long kNcclSubsysNet = 16;  // NCCL_NET
constexpr int kNcclNetHandleMaxSize = 128;     // NCCL_NET_HANDLE_MAXSIZE
constexpr int kNcclPtrHost = 0x1;
constexpr int kNcclPtrCuda = 0x2;
constexpr int kNcclPtrDmabuf = 0x4;
constexpr int kNcclNetMaxRequests = 32;        // outstanding requests NCCL may post per comm
constexpr int kNcclNetDeviceHost = 0;          // ncclNetDeviceType HOST

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file,
                                  int line, const char* fmt, ...);
typedef ncclResult_t (*ncclProfilerCallback_t)(void** eHandle, int type, void* pHandle,
                                               int64_t pluginId, void* extData);

// Device offload handle: HARP never offloads, it only ever sees and leaves this pointer alone.
struct ncclNetDeviceHandle_t;

// v10+: per-connection configuration.
struct ncclNetCommConfig_t {
  int trafficClass;  // -1 = undefined
};

}  // namespace harp_abi
