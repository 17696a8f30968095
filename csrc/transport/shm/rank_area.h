// RankArea: the layout of one rank's shared-memory segment, which its host peers map.
//
// DESIGN. Each rank owns one segment. Peers write into it only through the fields named here.
// The segment holds one set of the fields below per *channel* (LIGHT_NUM_STREAMS: channel 0 is
// the engine thread's, channels 1..k the stream workers'), so channels never share a word and
// each thread of the owner sleeps on its own doorbell:
//  - header.bells[c].doorbell: a futex word. Anyone who wants the owner's channel-c thread to
//    look again bumps it (and calls futex_wake when bells[c].sleeping counts sleepers: on
//    channel 0 both the engine thread and a caller driving it may sleep).
//  - counters[c][slot]: sync counters, one per process set (slot = process-set id). Written only
//    by the owner, read by every member of the set. Slots from kReadDoneSlotBase on count, per
//    local peer j, the reads of j's staging the owner has finished (see HostGroup::readDone).
//  - rings[c][j]: the SPSC byte ring carrying messages from local rank j to the owner. j is the
//    only producer (writes data and `head`), the owner the only consumer (writes `tail`).
//  - meta[c] and staging areas: written only by the owner, read by peers during a collective,
//    guarded by the counters. Only channels that run collectives have a staging area.
//  - the direct area (one-host jobs only): DirectArea plus two payload slots, the lockstep
//    exchange of callers' synchronous small allreduces (direct_exchange.h). Its own doorbell,
//    so those callers and the engine thread never wake each other.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace lightcc::shm {

constexpr uint64_t kRankAreaMagic = 0x314145524343494CULL;  // "LICCREA1"
constexpr int kMaxSetSlots = 4096;
// Process-set ids stay below this; the slots above serve the 2D sub-communicators.
constexpr int kMaxProcessSets = kMaxSetSlots / 4;
// Slots [kReadDoneSlotBase, kMaxSetSlots) are the read-done counters, one per local rank.
constexpr int kReadDoneSlotBase = 3 * kMaxProcessSets;
constexpr int kMaxLocalRanks = kMaxSetSlots - kReadDoneSlotBase;
constexpr size_t kMetaBytes = 64 << 10;
constexpr size_t kCacheLine = 64;
// The engine thread's channel plus at most 8 streams (LIGHT_NUM_STREAMS).
constexpr int kMaxChannels = 9;

struct alignas(kCacheLine) PaddedCounter {
  std::atomic<uint64_t> value;
};

struct alignas(kCacheLine) Bell {
  std::atomic<uint32_t> doorbell;
  std::atomic<uint32_t> sleeping;  // how many of the owner's threads sleep on this doorbell
};

constexpr size_t kFailureTextBytes = 1024;

struct alignas(kCacheLine) RankHeader {
  uint64_t magic;
  int32_t pid;
  int32_t global_rank;
  Bell bells[kMaxChannels];
  // Set once by the owner when its engine stops on an error while its process lives on (an
  // interrupted caller, a failed peer): host peers waiting on it give up at once, with the text.
  alignas(kCacheLine) std::atomic<uint32_t> failed;
  char failure[kFailureTextBytes];
};

// One posted operation of the direct exchange: what it is, so the ranks can check they agree.
struct alignas(kCacheLine) DirectSlot {
  std::atomic<uint64_t> posted;  // the exchange step this slot describes (0: none yet)
  uint64_t name_hash;
  uint64_t count;
  int32_t op;
  double prescale;
  double postscale;
  int32_t dtype;
  int32_t reduce_op;
  int32_t process_set_id;
  uint32_t name_bytes;
  int32_t ready;  // 0: this rank cannot take the step (the engine must run the operation)
};

struct alignas(kCacheLine) DirectArea {
  // Only local rank 0's are used: per step parity, (step << 2) | outcome, set once by CAS.
  PaddedCounter decision[2];
  PaddedCounter done;           // the last step this rank no longer reads anything of
  PaddedCounter away;           // nonzero: this rank will not post soon (join pending, shutdown)
  Bell bell;                    // the owner's callers sleep here while they wait for peers
  DirectSlot slot[2];           // by step parity; payloads follow the area
};

struct RingHeader {
  alignas(kCacheLine) std::atomic<uint64_t> head;  // bytes ever written (producer)
  alignas(kCacheLine) std::atomic<uint64_t> tail;  // bytes ever consumed (consumer)
  alignas(kCacheLine) std::atomic<uint32_t> producer_sleeping;  // producer waits for space
};

// The point-to-point rings of a rank's area: ring (channel c, from local rank j) at
// off + c * channel_stride + j * stride, its data in the last bytes (rounded up) of that stride.
struct RingsLayout {
  size_t off;
  size_t stride;  // RingHeader rounded up + ring capacity
  size_t bytes;   // capacity
  size_t channel_stride;
};

// Channel c's fields sit at base + X_off + c * X_channel_stride. Staging areas belong to the
// last `staging_areas` channels (with one channel, to channel 0; with streams, channels 1..k).
struct RankAreaLayout {
  int channels;
  int staging_areas;
  size_t counters_off;
  size_t counters_stride;
  RingsLayout rings;
  size_t meta_off;
  size_t staging_off;
  size_t staging_bytes;  // two chunks per staging area
  size_t direct_off;     // 0: no direct area (a job over several hosts)
  size_t direct_bytes;   // payload capacity of each of the two direct slots
  size_t total;

  static RankAreaLayout compute(int local_size, size_t ring_bytes, size_t chunk_bytes, int channels = 1,
                                int staging_areas = 1, size_t direct_bytes = 0) {
    auto roundUp = [](size_t x, size_t a) { return (x + a - 1) / a * a; };
    RankAreaLayout l{};
    l.channels = channels;
    l.staging_areas = staging_areas;
    l.counters_off = roundUp(sizeof(RankHeader), 4096);
    l.counters_stride = roundUp(sizeof(PaddedCounter) * kMaxSetSlots, 4096);
    l.rings.off = l.counters_off + l.counters_stride * static_cast<size_t>(channels);
    l.rings.bytes = ring_bytes;
    l.rings.stride = roundUp(sizeof(RingHeader), 4096) + roundUp(ring_bytes, 4096);
    l.rings.channel_stride = l.rings.stride * static_cast<size_t>(local_size);
    l.meta_off = l.rings.off + l.rings.channel_stride * static_cast<size_t>(channels);
    l.staging_off = roundUp(l.meta_off + kMetaBytes * static_cast<size_t>(channels), 4096);
    l.staging_bytes = 2 * chunk_bytes;
    const size_t after_staging = roundUp(l.staging_off + l.staging_bytes * static_cast<size_t>(staging_areas), 4096);
    l.direct_bytes = roundUp(direct_bytes, kCacheLine);
    l.direct_off = direct_bytes > 0 ? after_staging : 0;
    l.total = direct_bytes > 0 ? roundUp(after_staging + sizeof(DirectArea) + 2 * l.direct_bytes, 4096) : after_staging;
    return l;
  }
};

}  // namespace lightcc::shm
