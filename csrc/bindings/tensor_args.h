// tensor_args.h: one tensor as a front submits it, and what the edge decides from it alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/op_traits.h"

namespace lightcc::bindings {

// Where a tensor's bytes are: the memory the op reads and writes, and how to order after its writer.
struct TensorMemory {
  uintptr_t input = 0;
  uintptr_t output = 0;
  int device = -1;       // -1 host memory, else the CUDA device ordinal
  uintptr_t stream = 0;  // GPU tensors: the caller's current stream
};

// The 14-tuple the fronts pass to _core.submit/run (lightcc/common/ops.py): pybind's caster
// (bindings/casters.h) converts it, the tuple's order being (op, name, input, output, dtype,
// shape, reduce_op, root, prescale, postscale, process_set_id, aux, device, stream).
struct TensorArgs {
  int op = 0;  // OpType wire code
  std::string name;
  int dtype = 0;  // DataType code
  std::vector<int64_t> shape;
  int reduce_op = 0;  // ReduceOp code
  int root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  int process_set_id = 0;
  std::vector<int64_t> aux;
  TensorMemory memory;
};

// Whether the engine must wait on an event recorded on the caller's stream before it reads this
// tensor. Decided by the op's row, never by its number: a collective added later gets the event
// as soon as its row asks for it.
inline bool needsReadyEvent(const TensorArgs& t) {
  return t.memory.device >= 0 && isOpCode(t.op) && needsCallerStreamEvent(static_cast<OpType>(t.op));
}

}  // namespace lightcc::bindings
