// Version-neutral plugin API: init/devices/properties, memory registration, the data path.
#include "api.h"

#include <sys/mman.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>

#include "comm.h"
#include "comm_setup.h"
#include "log.h"
#include "runtime.h"

namespace harp {
namespace {

constexpr size_t kHugePage = 2u << 20;

CommCore* asComm(void* p, uint32_t magic) {
  auto* c = static_cast<CommCore*>(p);
  return (c != nullptr && c->magic == magic) ? c : nullptr;
}

// Reports a comm's stored error once (the first time a caller sees it) and returns its code.
ncclResult_t reportError(CommCore* c) {
  ncclResult_t e = c->error();
  if (c->firstReport()) HARP_WARN("%s", c->errorMessage());
  return e;
}

bool checkMr(void* mhandle, const void* data, size_t size, const char* op) {
  if (mhandle == nullptr) return true;  // registration is optional for host memory
  auto* mr = static_cast<MemRegion*>(mhandle);
  if (mr->magic != kMrMagic) {
    HARP_WARN("%s: mhandle %p is not a HARP registration", op, mhandle);
    return false;
  }
  const char* p = static_cast<const char*>(data);
  if (size > 0 && (p < mr->base || p + size > mr->base + mr->size)) {
    HARP_WARN("%s: buffer %p+%zu lies outside its registration %p+%zu", op, data, size,
              static_cast<void*>(mr->base), mr->size);
    return false;
  }
  return true;
}

// Reserves the next slot, or returns null for back-pressure (slot or a lane not yet free). A
// lane that holds the slot back may be asleep with posts it was never woken for: wake it.
Request* reserveSlot(CommCore* c) {
  uint64_t seq = c->next_seq;
  Request& r = c->slots[seq % kSlots];
  if (r.state != ReqState::kFree) return nullptr;
  for (auto& lane : c->lanes) {
    if (lane->ring.freeSlots() == 0 ||
        (c->kind == CommKind::kSend && seq >= kSlots &&
         lane->retired.load(std::memory_order_acquire) <= seq - kSlots)) {
      lane->worker->wake();
      return nullptr;
    }
  }
  r.seq = seq;
  return &r;
}

// Every lane gets the post (any of its flows may carry a chunk), but only the instances that can
// act on it now are woken. A send of k chunks wakes min(k, lanes) instances, round-robin by seq so
// small messages spread over cores; the others retire it when they next run (reserveSlot wakes
// them before their lag could block a slot). A receive wakes only a lane with a flow parked
// waiting for a post; otherwise the chunk's arrival wakes the instance, which then sees the post.
void publish(CommCore* c, Request* r) {
  r->state = ReqState::kPosted;
  ++c->next_seq;
  for (auto& lane : c->lanes) {
    lane->ring.push({r, r->seq});  // cannot fail: reserveSlot checked for room
  }
  size_t nlanes = c->lanes.size();
  if (c->kind == CommKind::kRecv) {
    for (auto& lane : c->lanes) lane->worker->wakeIfParked(*lane);
    return;
  }
  size_t wake = static_cast<size_t>(std::min<uint64_t>(r->nchunks, nlanes));
  for (size_t k = 0; k < wake; ++k) c->lanes[(r->seq + k) % nlanes]->worker->wake();
}

}  // namespace

ncclResult_t harpInit(harp_abi::ncclDebugLogger_t logger) { return harpRuntimeInit(logger); }

ncclResult_t harpDevices(int* ndev) {
  Runtime* rt = harpRuntime();
  if (rt == nullptr) return harp_abi::ncclInternalError;
  if (ndev == nullptr) return harp_abi::ncclInvalidArgument;
  *ndev = static_cast<int>(rt->devices.size());
  return harp_abi::ncclSuccess;
}

ncclResult_t harpGetProps(int dev, DeviceProps* props) {
  Runtime* rt = harpRuntime();
  if (rt == nullptr) return harp_abi::ncclInternalError;
  if (props == nullptr || dev < 0 || dev >= static_cast<int>(rt->devices.size())) {
    return harp_abi::ncclInvalidArgument;
  }
  Device& d = rt->devices[static_cast<size_t>(dev)];
  props->name = const_cast<char*>(d.name.c_str());
  props->pci_path = d.pci_path.empty() ? nullptr : const_cast<char*>(d.pci_path.c_str());
  props->guid = d.guid;
  props->speed_mbps = d.speed_mbps;
  props->port = 0;
  props->max_comms = 65536;
  props->max_recvs = 1;
  props->max_p2p_bytes = 1u << 30;  // test() reports sizes as int
  return harp_abi::ncclSuccess;
}

ncclResult_t harpRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (asComm(comm, kSendMagic) == nullptr && asComm(comm, kRecvMagic) == nullptr) {
    return harp_abi::ncclInvalidArgument;
  }
  if (mhandle == nullptr || (data == nullptr && size > 0)) return harp_abi::ncclInvalidArgument;
  if (type != harp_abi::kNcclPtrHost) {
    HARP_WARN("regMr: memory type %d unsupported: HARP serves host memory only", type);
    return harp_abi::ncclInternalError;
  }
  auto mr = std::make_unique<MemRegion>();
  mr->base = static_cast<char*>(data);
  mr->size = size;
  mr->type = type;
  Runtime* rt = harpRuntime();
  if (rt != nullptr && rt->params.hugepages && size >= 2 * kHugePage) {
    // Transparent huge pages for the aligned interior: fewer TLB misses and cheaper page
    // pinning for zero-copy sends. Advisory; a kernel without THP simply ignores it.
    uintptr_t b = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
    uintptr_t e = (reinterpret_cast<uintptr_t>(data) + size) & ~(kHugePage - 1);
    if (e > b && madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE) != 0) {
      HARP_INFO("regMr: madvise(MADV_HUGEPAGE) on %zu bytes: %s", e - b, strerror(errno));
    }
  }
  *mhandle = mr.release();
  return harp_abi::ncclSuccess;
}

ncclResult_t harpDeregMr(void* comm, void* mhandle) {
  if (asComm(comm, kSendMagic) == nullptr && asComm(comm, kRecvMagic) == nullptr) {
    return harp_abi::ncclInvalidArgument;
  }
  auto* mr = static_cast<MemRegion*>(mhandle);
  if (mr == nullptr || mr->magic != kMrMagic) return harp_abi::ncclInvalidArgument;
  mr->magic = kDeadMagic;
  std::unique_ptr<MemRegion> owned(mr);
  return harp_abi::ncclSuccess;
}

ncclResult_t harpIsend(void* send_comm, void* data, size_t size, void* mhandle, void** request) {
  CommCore* c = asComm(send_comm, kSendMagic);
  if (c == nullptr || request == nullptr || (data == nullptr && size > 0)) {
    return harp_abi::ncclInvalidArgument;
  }
  if (!checkMr(mhandle, data, size, "isend")) return harp_abi::ncclInvalidArgument;
  *request = nullptr;
  if (c->error() != harp_abi::ncclSuccess) return reportError(c);
  Request* r = reserveSlot(c);
  if (r == nullptr) return harp_abi::ncclSuccess;
  r->data = static_cast<char*>(data);
  r->size = size;
  r->chunk_bytes = c->chunk_bytes;
  r->nchunks = std::max<uint64_t>(1, (size + c->chunk_bytes - 1) / c->chunk_bytes);
  r->next_chunk.store(0, std::memory_order_relaxed);
  r->chunks_done.store(0, std::memory_order_relaxed);
  publish(c, r);
  *request = r;
  return harp_abi::ncclSuccess;
}

ncclResult_t harpIrecv(void* recv_comm, int n, void** data, const size_t* sizes, void** mhandles,
                       void** request) {
  CommCore* c = asComm(recv_comm, kRecvMagic);
  if (c == nullptr || request == nullptr || data == nullptr || sizes == nullptr) {
    return harp_abi::ncclInvalidArgument;
  }
  if (n != 1) {
    HARP_WARN("irecv: %d grouped receives requested; HARP advertises maxRecvs=1", n);
    return harp_abi::ncclInternalError;
  }
  if (data[0] == nullptr && sizes[0] > 0) return harp_abi::ncclInvalidArgument;
  if (!checkMr(mhandles != nullptr ? mhandles[0] : nullptr, data[0], sizes[0], "irecv")) {
    return harp_abi::ncclInvalidArgument;
  }
  *request = nullptr;
  if (c->error() != harp_abi::ncclSuccess) return reportError(c);
  Request* r = reserveSlot(c);
  if (r == nullptr) return harp_abi::ncclSuccess;
  r->data = static_cast<char*>(data[0]);
  r->size = sizes[0];
  r->total.store(-1, std::memory_order_relaxed);
  r->bytes_done.store(0, std::memory_order_relaxed);
  publish(c, r);
  *request = r;
  return harp_abi::ncclSuccess;
}

ncclResult_t harpIflush(void* recv_comm, int n, void** data, void** mhandles, void** request) {
  (void)data;
  (void)mhandles;
  if (asComm(recv_comm, kRecvMagic) == nullptr || request == nullptr || n < 0) {
    return harp_abi::ncclInvalidArgument;
  }
  *request = nullptr;  // host memory: received bytes are already visible, nothing to flush
  return harp_abi::ncclSuccess;
}

ncclResult_t harpTest(void* request, int* done, size_t* size) {
  auto* r = static_cast<Request*>(request);
  if (r == nullptr || done == nullptr || r->magic != kReqMagic) return harp_abi::ncclInvalidArgument;
  if (r->state != ReqState::kPosted) {
    HARP_WARN("test: request %p is not in flight (already completed?)", request);
    return harp_abi::ncclInternalError;
  }
  CommCore* c = r->comm;
  // Read the failure signals before the progress counters: workers publish a chunk's bytes
  // before they can observe the EOF or error that follows it, so a request that completed
  // before the peer closed is always reported done, never failed.
  ncclResult_t err = c->error();
  bool all_eof = c->kind == CommKind::kRecv &&
                 c->eof_flows.load(std::memory_order_acquire) == c->nflows;
  bool finished;
  size_t bytes;
  if (c->kind == CommKind::kSend) {
    finished = r->chunks_done.load(std::memory_order_acquire) >= r->nchunks;
    bytes = r->size;
  } else {
    int64_t total = r->total.load(std::memory_order_acquire);
    finished = total >= 0 &&
               r->bytes_done.load(std::memory_order_acquire) == static_cast<uint64_t>(total);
    bytes = total >= 0 ? static_cast<size_t>(total) : 0;
  }
  *done = 0;
  if (finished) {
    r->state = ReqState::kFree;
    *done = 1;
    if (size != nullptr) *size = bytes;
    return harp_abi::ncclSuccess;
  }
  if (err == harp_abi::ncclSuccess && all_eof) {
    c->fail(harp_abi::ncclRemoteError, "peer %s closed the connection while receive %llu was posted",
            c->peer.c_str(), static_cast<unsigned long long>(r->seq));
    err = c->error();
  }
  if (err != harp_abi::ncclSuccess) {
    r->state = ReqState::kFree;
    return reportError(c);
  }
  return harp_abi::ncclSuccess;
}

ncclResult_t harpCloseSend(void* send_comm) {
  CommCore* c = asComm(send_comm, kSendMagic);
  if (c == nullptr) return harp_abi::ncclInvalidArgument;
  harpDestroyComm(std::unique_ptr<CommCore>(c));
  return harp_abi::ncclSuccess;
}

ncclResult_t harpCloseRecv(void* recv_comm) {
  CommCore* c = asComm(recv_comm, kRecvMagic);
  if (c == nullptr) return harp_abi::ncclInvalidArgument;
  harpDestroyComm(std::unique_ptr<CommCore>(c));
  return harp_abi::ncclSuccess;
}

}  // namespace harp
