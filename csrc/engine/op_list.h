// op_list.h: the one list of ops, a row of facts each; OpType, kNumOpTypes and kOpTraits all expand it.
//
// An X-macro so that the enum (request.h) and the table (op_traits.h) come from the same rows: a
// new op is one row here and its bodies in op_runs.cc (docs/design.md's checklist). Each row is
//   X(Enumerator, wire code, wire name, Python label, moves_data, can_fuse,
//     {has_root, takes_splits, agrees_aux, needs_dim, shapes, reduce ops},
//     caller_stream_event, runs_with_joined, changes_sets, bus_bw)
// with the fields of OpTraits (op_traits.h, which says what each means). The wire codes are the
// protocol with peers and Python: a new op takes the next one, and row i must carry code i
// (op_traits.h's static_assert). Only op_traits.h expands the fact columns (ShapeRule, BusBw and
// the reduce-op masks are declared there); request.h reads the first two.
#pragma once

#define LIGHTCC_OPS(X)                                                                                         \
  X(Allreduce, 0, "ALLREDUCE", "allreduce", true, true,                                                        \
    {false, false, false, false, ShapeRule::kAll, kEveryReduceOp}, true, true, false, BusBw::kReduced)          \
  X(Allgather, 1, "ALLGATHER", "allgather", true, false,                                                       \
    {false, false, false, true, ShapeRule::kTrailing, kNoReduceOps}, true, false, false, BusBw::kChunked)       \
  X(Broadcast, 2, "BROADCAST", "broadcast", true, false,                                                       \
    {true, false, false, false, ShapeRule::kAll, kNoReduceOps}, true, false, false, BusBw::kWhole)              \
  X(Alltoall, 3, "ALLTOALL", "alltoall", true, false,                                                          \
    {false, true, false, true, ShapeRule::kTrailing, kNoReduceOps}, true, false, false, BusBw::kChunked)        \
  X(Reducescatter, 4, "REDUCESCATTER", "reducescatter", true, false,                                           \
    {false, false, false, true, ShapeRule::kAll, kReducescatterOps}, true, false, false, BusBw::kChunked)       \
  X(Barrier, 5, "BARRIER", "barrier", false, false,                                                            \
    {false, false, false, false, ShapeRule::kNone, kNoReduceOps}, false, true, false, BusBw::kNone)             \
  X(Join, 6, "JOIN", "join", false, false,                                                                     \
    {false, false, false, false, ShapeRule::kNone, kNoReduceOps}, false, false, false, BusBw::kNone)            \
  X(AddProcessSet, 7, "ADD_PROCESS_SET", "add_process_set", false, false,                                      \
    {false, false, true, false, ShapeRule::kNone, kNoReduceOps}, false, false, true, BusBw::kNone)              \
  X(RemoveProcessSet, 8, "REMOVE_PROCESS_SET", "remove_process_set", false, false,                             \
    {false, false, true, false, ShapeRule::kNone, kNoReduceOps}, false, false, true, BusBw::kNone)              \
  LIGHTCC_TEST_OPS(X)

#ifdef LIGHTCC_TEST_EXTRA_OP
// tests/cpp/extra_op_test.cc only: a data op numbered past the others, as the next one will be.
#define LIGHTCC_TEST_OPS(X)                                                                                    \
  X(TestGather, 9, "TEST_GATHER", "test_gather", true, false,                                                  \
    {true, false, false, true, ShapeRule::kTrailing, kNoReduceOps}, true, false, false, BusBw::kChunked)
#else
#define LIGHTCC_TEST_OPS(X)
#endif
