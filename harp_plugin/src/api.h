// Version-neutral plugin API: what every exported ncclNetPlugin_vN forwards to.
//
// Threads (NCCL's rules): init/devices/getProperties/listen/connect/accept/regMr/close on the
// service thread; isend/irecv/test on the progress thread of the comm. Data-path calls are
// lock-free (see comm.h); control-path calls may take the runtime's registry mutex.
#pragma once

#include <cstddef>
#include <cstdint>

#include "harp/abi_common.h"

namespace harp {

using harp_abi::ncclResult_t;

// Properties in version-neutral form; the shims copy them into each version's struct.
struct DeviceProps {
  char* name;
  char* pci_path;  // null for virtual NICs
  uint64_t guid;
  int speed_mbps;
  int port;
  int max_comms;
  int max_recvs;
  size_t max_p2p_bytes;
};

ncclResult_t harpInit(harp_abi::ncclDebugLogger_t logger);
ncclResult_t harpDevices(int* ndev);
ncclResult_t harpGetProps(int dev, DeviceProps* props);
ncclResult_t harpRegMr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t harpDeregMr(void* comm, void* mhandle);
ncclResult_t harpIsend(void* send_comm, void* data, size_t size, void* mhandle, void** request);
ncclResult_t harpIrecv(void* recv_comm, int n, void** data, const size_t* sizes, void** mhandles,
                       void** request);
ncclResult_t harpIflush(void* recv_comm, int n, void** data, void** mhandles, void** request);
ncclResult_t harpTest(void* request, int* done, size_t* size);
ncclResult_t harpCloseSend(void* send_comm);
ncclResult_t harpCloseRecv(void* recv_comm);

}  // namespace harp
