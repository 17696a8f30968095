// Request and Response: what a rank asks the coordinator for, and what every rank then executes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "engine/op_list.h"

namespace lightcc {

// The ops' wire codes, one enumerator per row of engine/op_list.h (Python reads them from the
// core: lightcc/common/op_spec.py).
enum class OpType : uint8_t {
#define LIGHTCC_OP_ENUMERATOR(Op, code, ...) k##Op = code,
  LIGHTCC_OPS(LIGHTCC_OP_ENUMERATOR)
#undef LIGHTCC_OP_ENUMERATOR
};
#define LIGHTCC_OP_COUNT(...) +1
constexpr int kNumOpTypes = 0 LIGHTCC_OPS(LIGHTCC_OP_COUNT);  // one `+1` per row
#undef LIGHTCC_OP_COUNT
// What each op is and needs: engine/op_traits.h (adding an op: docs/design.md's checklist).

const char* opTypeName(OpType op);  // "ALLREDUCE", ...

// What an operation is, apart from its tensors: the part a Request asks for and its Response
// then carries, identical on every rank. Serialised once (message.cc's writeSignature) for both.
struct OpSignature {
  OpType op = OpType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce_op = ReduceOp::kSum;
  int32_t root = 0;
  int32_t process_set_id = 0;
  double prescale = 1.0;
  double postscale = 1.0;

  bool sameOp(const OpSignature& o) const {
    return op == o.op && dtype == o.dtype && reduce_op == o.reduce_op && root == o.root &&
           process_set_id == o.process_set_id && prescale == o.prescale && postscale == o.postscale;
  }
};

// One rank's description of one tensor operation. Everything here except `rank` and `aux` must
// agree across ranks (shape: all dims for allreduce/broadcast/reducescatter, dims after the
// first for allgather/alltoall).
struct Request : OpSignature {
  int32_t rank = 0;
  std::string name;
  std::vector<int64_t> shape;
  // Op-specific, may differ per rank: alltoall send splits; add_process_set member ranks;
  // remove_process_set: the id.
  std::vector<int64_t> aux;
  // Where this rank's tensor lives: -1 host memory, else the CUDA device ordinal (each rank its
  // own GPU, so only the kind — host or device — must agree across ranks).
  int32_t device = -1;
  // Non-empty: this rank rejected the op locally (the text says why). Its peers may have
  // submitted theirs already, so the request still goes to the coordinator, which fails the
  // tensor on every rank instead of leaving them waiting for this one.
  std::string error;

  bool onDevice() const { return device >= 0; }

  bool sameSignature(const Request& o) const {
    return sameOp(o) && name == o.name && shape == o.shape && aux == o.aux && onDevice() == o.onDevice();
  }
};

// What every rank executes, identical on all ranks. One Response covers one or more tensors of
// the same op, dtype, reduce op, scales and process set (fusion merges several).
struct Response : OpSignature {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;  // per tensor, the agreed (first rank's) shape
  // Allgather: first dimension of every member's tensor, tensor-major (names.size() x set size).
  std::vector<int64_t> first_dims;
  std::string error;  // non-empty: fail every named tensor with this message on every rank
  int32_t last_joined = -1;   // join: the last rank to join
  std::vector<int64_t> aux;   // add_process_set: [new id, ranks...]; remove: [id]
  bool on_device = false;     // the tensors are GPU tensors (a device executor runs them)

  bool isError() const { return !error.empty(); }
};

// Agreed responses are immutable once made, so the cache, the fusion planner and the executor
// (on any stream) share them instead of copying names and shapes per tensor per step.
using ResponsePtr = std::shared_ptr<const Response>;

}  // namespace lightcc
