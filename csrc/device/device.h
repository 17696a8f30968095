// Device and Comm: the stream-ordered operations and collectives a device executor schedules with.
//
// DESIGN. The device executor (engine/device_executor.h) writes each schedule — fusion layout,
// 2D phases, the top-k exchange, event ordering — once, against these two interfaces. Two
// implementations exist: CUDA kernels + NCCL (cuda_device.h, nccl.h), and the host
// (algorithms/host_device.h: CPU kernels + the engine's own shared-memory and link collectives), which CI
// runs on CPU tensors so every schedule is exercised without a GPU.
//
// A Device is one accelerator as one executor sees it: the executor's own stream on it. Every
// operation is enqueued on that stream and returns without waiting (the host implementation
// simply runs it). Pointers are device memory unless a comment says host.
//
// A Device is narrow on purpose: memory, ordering and the buffer-wide kernels the fusion buffer
// and the dense schedules use. The top-k algorithms' kernels are a separate interface
// (TopkKernels, device/topk_kernels.h) that a Device hands out for its stream.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"
#include "device/topk_kernels.h"

namespace lightcc::device {

// An ordering point on a stream. Completes when the work before its record has finished.
class Event {
 public:
  virtual ~Event() = default;
  // Never blocks; a failed kernel before the record reports its error.
  virtual Status query(bool* done) = 0;
  // Blocks the calling thread (only where a CPU answer is needed).
  virtual Status synchronize() = 0;
  // Orders work later enqueued on `stream` (a foreign stream, e.g. the caller's) after this.
  virtual Status orderStream(void* stream) = 0;
};
using EventPtr = std::shared_ptr<Event>;

// Device memory that frees itself; owned by whoever holds the last pointer.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() const = 0;
  virtual size_t size() const = 0;
  virtual int device() const = 0;  // -1: host memory
  // Blocking copies to and from host memory, for checkpoints (never on the data path); the
  // caller orders them after the work that uses the buffer (Event::synchronize).
  virtual Status download(void* host, size_t bytes) const = 0;
  virtual Status upload(const void* host, size_t bytes) = 0;
};
using BufferPtr = std::shared_ptr<Buffer>;

// One tensor of a fusion buffer: `bytes` at `ptr`, placed at `offset` bytes into the buffer.
// pack reads ptr (null: zeros, a joined rank's contribution); unpack writes it (null: skipped).
// Host struct.
struct Segment {
  void* ptr;
  size_t offset;
  size_t bytes;
};

// An output made by the tensor's own framework (torch's caching allocator, CuPy's pool, NumPy,
// TensorFlow), asked for by the executor once the collective has agreed its size (allgather,
// alltoall, reducescatter). The Python edge implements it (bindings/outputs.h); the executing
// thread calls it.
class OutputAllocator {
 public:
  virtual ~OutputAllocator() = default;
  // `*out`: at least `bytes` for an output of `shape`. `*ready` (may stay null): the executor's
  // stream writes only after it, since the framework may hand out memory its own stream still uses.
  virtual Status allocate(const std::vector<int64_t>& shape, size_t bytes, BufferPtr* out, EventPtr* ready) = 0;
};
using OutputAllocatorPtr = std::shared_ptr<OutputAllocator>;

// Where a Device counts its allocations (EngineStats' counters; null: not counted). A test asserts
// that none happen per call once the scratch buffers have grown.
struct AllocCounters {
  std::atomic<uint64_t>* calls = nullptr;
  std::atomic<uint64_t>* bytes = nullptr;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string describe() const = 0;  // "cuda:0", "host"
  virtual int ordinal() const = 0;           // -1 for the host

  // Memory the core owns, counted: buffers kept across batches (fusion, scratch, residuals) and
  // the outputs of callers that gave no OutputAllocator. Never called per element.
  Status alloc(size_t bytes, BufferPtr* out) {
    LIGHTCC_RETURN_IF_ERROR(allocate(bytes, out));
    if (counters_.calls != nullptr) counters_.calls->fetch_add(1, std::memory_order_relaxed);
    if (counters_.bytes != nullptr) counters_.bytes->fetch_add(bytes, std::memory_order_relaxed);
    return Status::OK();
  }
  void countInto(AllocCounters counters) { counters_ = counters; }

  // Ordering with other streams.
  virtual Status waitFor(const EventPtr& event) = 0;  // my stream after `event`
  virtual Status record(EventPtr* out) = 0;            // an event after my work so far

  // Data movement and element-wise kernels (csrc/kernels semantics, bit for bit).
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  virtual Status zero(void* dst, size_t bytes) = 0;
  virtual Status pack(void* buffer, const std::vector<Segment>& segments) = 0;
  virtual Status unpack(const void* buffer, const std::vector<Segment>& segments) = 0;
  virtual Status scale(void* dst, const void* src, size_t count, DataType dtype, double factor) = 0;
  virtual Status divideIntegers(void* data, size_t count, DataType dtype, int64_t divisor) = 0;

  // The sparse (top-k) kernels, enqueued on this same stream: what the top-k algorithms need
  // beyond moving and scaling buffers (device/topk_kernels.h).
  virtual TopkKernels& topk() = 0;

 protected:
  virtual Status allocate(size_t bytes, BufferPtr* out) = 0;  // alloc's work, uncounted

 private:
  AllocCounters counters_;
};

// Makes `*buf` hold at least `bytes`, keeping it when it does: scratch reused batch after batch
// grows by half again, so a slowly growing fusion does not reallocate every step.
inline Status grow(Device& dev, BufferPtr* buf, size_t bytes) {
  if (*buf && (*buf)->size() >= bytes) return Status::OK();
  const size_t larger = *buf ? (*buf)->size() * 3 / 2 : 0;
  return dev.alloc(bytes > larger ? bytes : larger, buf);
}

// Collectives among the members of one communicator, enqueued on the Device's stream.
// Reductions take an element-wise op (Sum, Min, Max, Product); scaling is the executor's.
class Comm {
 public:
  virtual ~Comm() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;  // my member index
  virtual Status allreduce(void* buf, size_t count, DataType dtype, ReduceOp op) = 0;
  // Member j receives the reduction of elements [j*count, (j+1)*count) of every member's `in`.
  virtual Status reduceScatter(const void* in, void* out, size_t count, DataType dtype, ReduceOp op) = 0;
  // out = every member's `bytes` from `in`, in member order.
  virtual Status allGather(const void* in, void* out, size_t bytes) = 0;
  // As allGather with per-member sizes (HOST array of bytes).
  virtual Status allGatherV(const void* in, void* out, const std::vector<size_t>& bytes) = 0;
  virtual Status broadcast(void* buf, size_t bytes, int root) = 0;
  // send[k]/recv[k]: bytes to / from member k; `in` and `out` hold them in member order.
  virtual Status alltoallV(const void* in, const std::vector<size_t>& send, void* out,
                           const std::vector<size_t>& recv) = 0;
  // Point to point with member `peer`: sends send_bytes from `send` while receiving recv_bytes
  // into `recv` (either side may be empty), as one step.
  virtual Status sendRecv(int peer, const void* send, size_t send_bytes, void* recv, size_t recv_bytes) = 0;
  // Stops every call in flight (a peer failed); the communicator is unusable afterwards.
  virtual void abort() = 0;
  // A failure NCCL noticed on its own (a broken peer) while calls were in flight.
  virtual Status asyncError() = 0;
};

}  // namespace lightcc::device
