// Comm: the state of one established send or recv connection, its request slots and lanes.
//
// DESIGN (data path). A comm has N TCP flows spread over engine instances (one Lane per instance
// it uses; comm_setup.h places them). The NCCL thread driving the comm owns the request slots'
// lifecycle and `next_seq`; it hands each posted request to every lane through the lane's SPSC
// ring and wakes the instance. The instance thread owns the lane's flows and local views
// outright. Progress flows back only through atomics in the Request (claim cursor, chunk/byte
// counters) and the comm's error word.
// No mutex is taken on isend/irecv/test or in the instance loop's data handling.
//   send: instances claim chunks with next_chunk.fetch_add; a chunk counts as done once written
//         (or, zero-copy, once the kernel released its pages). Done when chunks_done == nchunks.
//         A slot is reused only after every lane has retired its seq (lane.retired), so no
//         instance can ever claim from a recycled slot.
//   recv: chunks carry (seq, offset, total); the instance looks the seq up in its lane table and
//         receives the payload straight into the destination. Done when bytes_done == total.
//         A chunk for seq s exists only while s is incomplete, so its slot cannot be recycled.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flow_governor.h"
#include "harp/abi_common.h"
#include "spsc_ring.h"
#include "wire.h"

namespace harp {

class Worker;
struct Flow;
struct CommCore;

using harp_abi::ncclResult_t;

constexpr int kSlots = 64;  // request slots per comm; NCCL needs 32 outstanding
constexpr uint32_t kReqMagic = 0x52505148;    // "HQPR"
constexpr uint32_t kSendMagic = 0x444e5348;   // "HSND"
constexpr uint32_t kRecvMagic = 0x56435248;   // "HRCV"
constexpr uint32_t kListenMagic = 0x4e534c48; // "HLSN"
constexpr uint32_t kMrMagic = 0x524d4d48;     // "HMMR"
constexpr uint32_t kDeadMagic = 0xdeadbeef;

// Request lifecycle, moved only by the NCCL thread (harpIsend/harpIrecv/harpTest):
//   kFree -(isend/irecv)-> kPosted -(test reports done or error)-> kFree
enum class ReqState : uint8_t { kFree, kPosted };

struct Request {
  uint32_t magic = kReqMagic;
  ReqState state = ReqState::kFree;
  CommCore* comm = nullptr;
  uint64_t seq = 0;
  char* data = nullptr;
  size_t size = 0;         // send: message bytes; recv: buffer capacity
  uint64_t nchunks = 0;    // send
  uint64_t chunk_bytes = 0;
  alignas(64) std::atomic<uint64_t> next_chunk{0};   // send: claim cursor (instances)
  std::atomic<uint64_t> chunks_done{0};              // send: chunks released by the kernel
  std::atomic<int64_t> total{-1};                    // recv: message size, -1 until known
  std::atomic<uint64_t> bytes_done{0};               // recv: payload bytes landed
};

// What crosses a lane ring: a posted request and its sequence number.
struct Posted {
  Request* req;
  uint64_t seq;
};

// The part of a comm one instance serves. Created by the connecting thread, then owned by the
// instance between attach and detach (flows, views); ring and retired are the shared edges.
struct Lane {
  Worker* worker = nullptr;
  CommCore* comm = nullptr;
  SpscRing<Posted, 128> ring;                      // NCCL thread -> instance
  alignas(64) std::atomic<uint64_t> retired{0};    // send: seqs this instance finished claiming
  std::atomic<bool> parked{false};                 // recv: a flow waits for a post (see wakeIfParked)
  std::vector<std::unique_ptr<Flow>> flows;        // instance-owned after attach
  FlowGovernor governor;      // send: how many flows (slots 0..active-1) claim chunks
  uint64_t sent_bytes = 0;    // send: bytes written on every flow, for the governor
  // Instance-local views.
  Posted queue[kSlots] = {};  // send: posted messages not yet exhausted, FIFO
  uint64_t q_head = 0, q_tail = 0;
  Posted table[kSlots] = {};  // recv: posted receives by seq % kSlots
  uint64_t known_seq = 0;     // seqs received from the ring so far
  bool parked_view = false;   // last value stored to `parked`

  Lane();
  ~Lane();  // out of line: Flow is only complete in flow.h
};

enum class CommKind : uint8_t { kSend, kRecv };

// The first error a comm hit, recorded from any thread; later ones are dropped.
class FirstError {
 public:
  // Keeps this error when it is the first; false when another thread's came first.
  bool record(ncclResult_t code, const char* fmt, va_list ap);
  ncclResult_t code() const { return static_cast<ncclResult_t>(code_.load(std::memory_order_acquire)); }
  const char* message() const { return msg_; }
  // True only the first time it is asked (NCCL thread only): the error is logged once.
  bool takeReport() {
    if (reported_) return false;
    reported_ = true;
    return true;
  }

 private:
  std::atomic<int> code_{0};
  std::atomic<bool> claimed_{false};
  char msg_[320] = {};
  bool reported_ = false;
};

struct CommCore {
  uint32_t magic;
  CommKind kind;
  std::string peer;         // "address:port" of the other end, for messages
  uint64_t comm_id = 0;
  int nflows = 0;
  uint64_t chunk_bytes = 0;
  size_t zc_min_bytes = 0;
  Request slots[kSlots];
  uint64_t next_seq = 0;    // NCCL thread only
  std::vector<std::unique_ptr<Lane>> lanes;
  std::atomic<int> eof_flows{0};  // recv: flows the peer closed cleanly

  CommCore(uint32_t m, CommKind k) : magic(m), kind(k) {}
  ~CommCore();

  // Records the first error (any thread); later ones are dropped. Messages name the peer.
  void fail(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
  ncclResult_t error() const { return error_.code(); }
  const char* errorMessage() const { return error_.message(); }
  // True the first time a caller sees the error (NCCL thread only), which then logs it.
  bool firstReport() { return error_.takeReport(); }

 private:
  FirstError error_;
};

// Host memory registration. Registration is comm-independent (regIsGlobal=0 still, per NCCL).
struct MemRegion {
  uint32_t magic = kMrMagic;
  char* base = nullptr;
  size_t size = 0;
  int type = 0;
};

}  // namespace harp
