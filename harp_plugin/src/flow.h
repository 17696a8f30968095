// Flow: one TCP connection of a comm, owned by exactly one engine instance after attach.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "wire.h"

namespace harp {

// A flow only points at the lane it belongs to and the request it serves; the lane owns the flow
// (comm.h), and the instance code that follows these pointers (worker.h) sees both definitions.
struct Lane;
struct Request;

// Flow states, moved only by the owning instance (send_path.cc / recv_path.cc):
//   send: kIdle -(claim a chunk)-> kSending -(header+payload written)-> kIdle
//         kSending -(payload handed to io_uring SEND_ZC)-> kUringBusy -(result CQE)-> kIdle
//         kIdle -(receiver closed)-> kEof -(a message still needs this comm)-> kBroken
//   recv: kHeader -(32 header bytes read)-> kParked -(seq posted)-> kPayload -(len bytes)-> kHeader
//         kHeader -(header read and seq already posted)-> kPayload
//         kHeader -(orderly EOF between chunks)-> kEof
//   any:  -(socket error, protocol error)-> kBroken
enum class FlowState : uint8_t { kIdle, kSending, kUringBusy, kHeader, kParked, kPayload, kEof, kBroken };

// A zero-copy send the kernel has not released yet (MSG_ZEROCOPY id or io_uring notification).
struct ZcPending {
  uint32_t id;         // MSG_ZEROCOPY call id (unused for io_uring)
  Request* req;        // credited with one chunk when released; null for partial sends
  bool released;
};

// Send side: the chunk in progress, and zero-copy sends the kernel still holds.
struct SendChunk {
  Request* req = nullptr;
  uint64_t offset = 0;
  uint64_t len = 0;
  size_t sent = 0;      // header + payload bytes written of this chunk
  bool zc = false;      // payload goes zero-copy
  uint8_t hdr[kChunkHeaderBytes] = {};
  uint32_t zc_next_id = 0;           // MSG_ZEROCOPY: id the next zerocopy call will get
  std::deque<ZcPending> zc_pending;  // in call order
};

// Receive side: the chunk header being read, then the payload landing in its request.
struct RecvChunk {
  uint8_t hdr[kChunkHeaderBytes] = {};
  size_t hdr_got = 0;
  ChunkHeader chunk;
  Request* req = nullptr;
  uint64_t got = 0;
};

struct Flow {
  int fd = -1;
  int index = 0;        // flow index within the comm
  int slot = 0;         // position within its lane (the governor lets slots below its count send)
  Lane* lane = nullptr;
  FlowState state = FlowState::kIdle;
  bool readable = false;
  bool writable = false;
  bool in_epoll = false;
  bool zc_capable = false;  // zero-copy enabled on this socket (SO_ZEROCOPY or io_uring)

  SendChunk send;  // send lanes' flows
  RecvChunk recv;  // receive lanes' flows
};

}  // namespace harp
