// Tests the op-traits table (engine/op_traits.h, expanded from op_list.h) and the edge's caller-stream decision.
//
// Pure and header-only (no engine). tests/single/test_cpp_units.py builds and runs it;
// extra_op_test.cc runs the same checks with one more op numbered past the rest.
#include <cstdio>
#include <set>
#include <string>

#include "bindings/tensor_args.h"
#include "check.h"
#include "engine/op_traits.h"

using namespace lightcc;
using lightcc::testing::check;

namespace {

std::string nameOf(int code) { return kOpTraits[static_cast<size_t>(code)].label; }

// Facts every row must keep, whatever op it describes.
void testRowsAreConsistent() {
  std::set<std::string> names, labels;
  for (int code = 0; code < kNumOpTypes; ++code) {
    const OpTraits& t = opTraits(static_cast<OpType>(code));
    const std::string who = nameOf(code);
    check(static_cast<int>(t.op) == code, who + ": row describes its own op");
    check(names.insert(t.name).second && labels.insert(t.label).second, who + ": names are unique");
    // A data op's GPU tensor is read by the engine's stream: without the event it races the
    // caller's kernels that produce it.
    check(!t.moves_data || t.caller_stream_event, who + ": a data op needs the caller-stream event");
    check(t.moves_data || !t.caller_stream_event, who + ": a control op has no tensor to order");
    check(t.moves_data || (!t.can_fuse && t.args.reduce_ops == kNoReduceOps && t.args.shapes == ShapeRule::kNone),
          who + ": control ops neither fuse, reduce nor compare shapes");
    check(!t.args.takes_splits || t.args.shapes == ShapeRule::kTrailing, who + ": splits vary the first dimension");
    check((t.args.reduce_ops & ~kEveryReduceOp) == 0, who + ": only known reduce ops");
    // A process-set change is a control op whose arguments (the ranks, or the id) must agree.
    check(!t.changes_sets || (!t.moves_data && t.args.agrees_aux), who + ": a set change is an agreed control op");
    // The bench sweeps every data op and needs its bus-bandwidth factor; a control op has none.
    check(t.moves_data == (t.bus_bw != BusBw::kNone), who + ": a bus-bandwidth kind iff it moves data");
  }
}

// The edge's decision for every op, host and GPU: the row alone answers.
void testReadyEventFollowsTheTable() {
  for (int code = 0; code < kNumOpTypes; ++code) {
    bindings::TensorArgs t;
    t.op = code;
    t.memory.device = 0;
    check(bindings::needsReadyEvent(t) == opTraits(static_cast<OpType>(code)).moves_data,
          nameOf(code) + " on a GPU: caller-stream event iff it moves data");
    t.memory.device = -1;
    check(!bindings::needsReadyEvent(t), nameOf(code) + " on the host: no event");
  }
  bindings::TensorArgs bad;
  bad.op = kNumOpTypes;
  bad.memory.device = 0;
  check(!bindings::needsReadyEvent(bad), "an unknown op code is not looked up");
}

void testKnownRows() {
  check(changesSets(OpType::kAddProcessSet) && changesSets(OpType::kRemoveProcessSet) &&
            !changesSets(OpType::kBarrier) && !changesSets(OpType::kAllreduce),
        "exactly add and remove change the process sets");
  check(movesData(OpType::kAllreduce) && canFuse(OpType::kAllreduce), "allreduce moves data and fuses");
  check(supportsReduceOp(OpType::kAllreduce, ReduceOp::kAdasum), "allreduce takes Adasum");
  check(supportsReduceOp(OpType::kReducescatter, ReduceOp::kAverage) &&
            !supportsReduceOp(OpType::kReducescatter, ReduceOp::kAdasum),
        "reducescatter takes Average but not Adasum");
  check(!takesReduceOp(OpType::kBroadcast) && hasRoot(OpType::kBroadcast), "broadcast: a root, no reduce op");
  check(takesSplits(OpType::kAlltoall) && !takesSplits(OpType::kAllgather), "only alltoall takes splits");
  check(!movesData(OpType::kBarrier) && !movesData(OpType::kJoin) && !movesData(OpType::kAddProcessSet) &&
            !movesData(OpType::kRemoveProcessSet),
        "barrier, join and process-set changes are control ops");
  check(opTraits(OpType::kAddProcessSet).args.agrees_aux, "process-set arguments must agree");
  check(opTraits(OpType::kAllreduce).bus_bw == BusBw::kReduced &&
            opTraits(OpType::kBroadcast).bus_bw == BusBw::kWhole && opTraits(OpType::kAlltoall).bus_bw == BusBw::kChunked,
        "nccl-tests' bus-bandwidth kinds: allreduce 2(p-1)/p, broadcast 1, alltoall (p-1)/p");
  // The wire codes are the protocol with peers and Python: the list must not renumber them.
  check(static_cast<int>(OpType::kAllreduce) == 0 && static_cast<int>(OpType::kReducescatter) == 4 &&
            static_cast<int>(OpType::kRemoveProcessSet) == 8,
        "wire codes 0..8 unchanged");
  check(isOpCode(0) && isOpCode(kNumOpTypes - 1) && !isOpCode(kNumOpTypes) && !isOpCode(-1), "op code range");
}

}  // namespace

int main() {
  testRowsAreConsistent();
  testReadyEventFollowsTheTable();
  testKnownRows();
  return testing::summary();
}
