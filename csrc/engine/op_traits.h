// op_traits.h: one row of facts per OpType, expanded from op_list.h; every "is this a data op / ..." reads it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "engine/request.h"

namespace lightcc {

// How the members' shapes must agree for one op (the coordinator's check).
enum class ShapeRule : uint8_t {
  kNone,      // no tensor, or shapes are not compared (barrier, join, process-set changes)
  kAll,       // every dimension (allreduce, broadcast, reducescatter)
  kTrailing,  // all dimensions but the first, which may differ per rank (allgather, alltoall)
};

// How much an op's buffer crosses each rank's link, as nccl-tests count it: the bench's bus
// bandwidth is algbw times this factor over p ranks (lightcc/bench/metrics.py).
enum class BusBw : uint8_t {
  kNone,     // no tensor (control ops)
  kWhole,    // every rank receives the whole buffer once: 1 (broadcast)
  kChunked,  // one chunk per rank, each rank moves all but its own: (p-1)/p (allgather, alltoall, reducescatter)
  kReduced,  // chunks reduced, then gathered: 2(p-1)/p (allreduce)
};

// A set of ReduceOps as bits (bit i: ReduceOp value i).
constexpr uint32_t reduceBit(ReduceOp r) { return 1u << static_cast<unsigned>(r); }
constexpr uint32_t kNoReduceOps = 0;
constexpr uint32_t kEveryReduceOp = reduceBit(ReduceOp::kAverage) | reduceBit(ReduceOp::kSum) |
                                    reduceBit(ReduceOp::kAdasum) | reduceBit(ReduceOp::kMin) |
                                    reduceBit(ReduceOp::kMax) | reduceBit(ReduceOp::kProduct) |
                                    reduceBit(ReduceOp::kBand) | reduceBit(ReduceOp::kBor) |
                                    reduceBit(ReduceOp::kBxor);

// What an op's arguments must be, locally and across members.
struct ArgRules {
  bool has_root;      // `root` names a member and must agree
  bool takes_splits;  // `aux` carries per-rank splits that may change every step without renegotiation
  bool agrees_aux;    // `aux` must be identical on every member (process-set arguments)
  bool needs_dim;     // the tensor needs at least one dimension
  ShapeRule shapes;
  uint32_t reduce_ops;  // the ReduceOps accepted; kNoReduceOps: reduce_op is ignored
};

struct OpTraits {
  OpType op;
  const char* name;   // the wire/log name, "ALLREDUCE"
  const char* label;  // the Python API's name, "allreduce" (error messages)
  // Carries tensor bytes: an executor runs it, the response cache keeps it, the autotuner scores
  // its bytes. The others are control ops the dispatcher applies itself.
  bool moves_data;
  bool can_fuse;      // several tensors may share one fused buffer
  ArgRules args;  // what the request's arguments must be (engine/validate.cc, coordinator.cc)
  // GPU tensors: the engine's stream waits on an event recorded on the caller's stream, else the
  // op would read a tensor whose producing kernels have not run yet.
  bool caller_stream_event;
  // May run while some member has joined (hvd.join): it contributes zeros to an allreduce and
  // nothing to a barrier, but has no rows to gather, scatter or exchange and cannot be a root.
  bool runs_with_joined;
  // Adds or removes a process set: dispatch applies it, and the fusion scheduler releases what it
  // holds back and flushes before it, since a set's members must see the change between batches.
  bool changes_sets;
  BusBw bus_bw;  // the bench's bus-bandwidth factor
};

constexpr uint32_t kReducescatterOps = kEveryReduceOp & ~reduceBit(ReduceOp::kAdasum);

// Indexed by OpType: one row per row of op_list.h; the static_assert below keeps row i describing op i.
#define LIGHTCC_OP_TRAITS_ROW(Op, code, ...) {OpType::k##Op, __VA_ARGS__},
inline constexpr std::array<OpTraits, kNumOpTypes> kOpTraits = {{LIGHTCC_OPS(LIGHTCC_OP_TRAITS_ROW)}};
#undef LIGHTCC_OP_TRAITS_ROW

constexpr bool opTraitsInOrder() {
  for (size_t i = 0; i < kOpTraits.size(); ++i) {
    if (static_cast<size_t>(kOpTraits[i].op) != i || kOpTraits[i].name == nullptr) return false;
  }
  return true;
}
static_assert(opTraitsInOrder(), "kOpTraits: row i must describe OpType i, one row per op");

// True for a wire code that names an op (codes arrive from Python and from peers).
constexpr bool isOpCode(int code) { return code >= 0 && code < kNumOpTypes; }

constexpr const OpTraits& opTraits(OpType op) { return kOpTraits[static_cast<size_t>(op)]; }

constexpr bool movesData(OpType op) { return opTraits(op).moves_data; }
constexpr bool canFuse(OpType op) { return opTraits(op).can_fuse; }
constexpr bool hasRoot(OpType op) { return opTraits(op).args.has_root; }
constexpr bool takesSplits(OpType op) { return opTraits(op).args.takes_splits; }
constexpr bool takesReduceOp(OpType op) { return opTraits(op).args.reduce_ops != kNoReduceOps; }
constexpr bool supportsReduceOp(OpType op, ReduceOp r) { return (opTraits(op).args.reduce_ops & reduceBit(r)) != 0; }
constexpr bool needsCallerStreamEvent(OpType op) { return opTraits(op).caller_stream_event; }
constexpr bool runsWithJoined(OpType op) { return opTraits(op).runs_with_joined; }
constexpr bool changesSets(OpType op) { return opTraits(op).changes_sets; }

}  // namespace lightcc
