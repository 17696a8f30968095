// RankArea: the layout of one rank's shared-memory segment, which its host peers map.
//
// DESIGN. Each rank owns one segment. Peers write into it only through the fields named here:
//  - header.doorbell: a futex word. Anyone who wants this rank's engine to look again bumps it
//    (and calls futex_wake when header.sleeping counts sleepers). The owner only sleeps.
//  - counters[slot]: sync counters, one per process set (slot = process-set id). Written only by
//    the owner, read by every member of the set.
//  - rings[j]: the SPSC byte ring carrying messages from local rank j to the owner. j is the
//    only producer (writes data and `head`), the owner the only consumer (writes `tail`).
//  - meta and staging: written only by the owner, read by peers during a collective, guarded by
//    the counters.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace lightcc::shm {

constexpr uint64_t kRankAreaMagic = 0x314145524343494CULL;  // "LICCREA1"
constexpr int kMaxSetSlots = 4096;
// Process-set ids stay below this; the slots above serve the 2D sub-communicators.
constexpr int kMaxProcessSets = kMaxSetSlots / 4;
constexpr size_t kMetaBytes = 64 << 10;
constexpr size_t kCacheLine = 64;

struct alignas(kCacheLine) PaddedCounter {
  std::atomic<uint64_t> value;
};

struct alignas(kCacheLine) RankHeader {
  uint64_t magic;
  int32_t pid;
  int32_t global_rank;
  alignas(kCacheLine) std::atomic<uint32_t> doorbell;
  std::atomic<uint32_t> sleeping;  // how many of the owner's threads sleep on the doorbell
};

struct RingHeader {
  alignas(kCacheLine) std::atomic<uint64_t> head;  // bytes ever written (producer)
  alignas(kCacheLine) std::atomic<uint64_t> tail;  // bytes ever consumed (consumer)
  alignas(kCacheLine) std::atomic<uint32_t> producer_sleeping;  // producer waits for space
};

struct RankAreaLayout {
  size_t counters_off;
  size_t rings_off;
  size_t ring_stride;  // RingHeader rounded up + ring capacity
  size_t ring_bytes;
  size_t meta_off;
  size_t staging_off;
  size_t staging_bytes;  // two chunks
  size_t total;

  static RankAreaLayout compute(int local_size, size_t ring_bytes, size_t chunk_bytes) {
    auto roundUp = [](size_t x, size_t a) { return (x + a - 1) / a * a; };
    RankAreaLayout l{};
    l.counters_off = 4096;
    l.rings_off = roundUp(l.counters_off + sizeof(PaddedCounter) * kMaxSetSlots, 4096);
    l.ring_bytes = ring_bytes;
    l.ring_stride = roundUp(sizeof(RingHeader), 4096) + roundUp(ring_bytes, 4096);
    l.meta_off = l.rings_off + l.ring_stride * static_cast<size_t>(local_size);
    l.staging_off = roundUp(l.meta_off + kMetaBytes, 4096);
    l.staging_bytes = 2 * chunk_bytes;
    l.total = roundUp(l.staging_off + l.staging_bytes, 4096);
    return l;
  }
};

}  // namespace lightcc::shm
