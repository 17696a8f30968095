// Connection setup: the listen handle, and the resumable connect/accept stage machines.
//
// DESIGN (control path). listen/connect/accept run on NCCL's service thread and never block:
// each call advances non-blocking sockets through the handshake in wire.h and returns a NULL
// comm until every flow of the comm is authenticated. The connect-side state lives in a
// Connector whose address is kept in the caller's handle memory (NCCL passes the same handle
// again); a registry validates that address before it is used. Accepted flows are grouped by
// the connector's random comm_id until all of its flows arrived.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm.h"
#include "harp/abi_common.h"
#include "net_util.h"

namespace harp {

constexpr uint32_t kHandleMagic = 0x4c444848;  // "HHDL"

// Connect-side progress kept in the handle: kFresh -(first connect)-> kConnecting -(done)-> kDone
enum class HandleStage : uint32_t { kFresh = 0, kConnecting = 1, kDone = 2 };

// The bytes NCCL carries from the listener to the connector (<= 128).
struct WireHandle {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
  uint64_t listen_id;
  uint8_t addr[sizeof(sockaddr_in6)];
  uint32_t stage;      // HandleStage: connect-side scratch, zero as sent
  uint64_t connector;  // Connector*: connect-side scratch, zero as sent
};
static_assert(sizeof(WireHandle) <= harp_abi::kNcclNetHandleMaxSize, "handle too large");

struct Listener;

ncclResult_t harpListen(int dev, void* handle, void** listen_comm);
ncclResult_t harpConnect(int dev, void* handle, void** send_comm);
ncclResult_t harpAccept(void* listen_comm, void** recv_comm);
ncclResult_t harpCloseListen(void* listen_comm);

}  // namespace harp
