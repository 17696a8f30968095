// Scaled integer reductions: a scalar loop through double, too rare to be worth vectorising.
#include <cstdint>

#include "kernels/reduce_ops.h"
#include "kernels/simd_dispatch.h"

namespace lightcc::kernels {
namespace {

// Per element (reduce_ops.h's reduceElement, shared with CUDA): every source is scaled and
// truncated into T, the results combined in T (wrapping for sum/product) in source order, and
// the total scaled and truncated again, which is what Horovod's separate prescale/allreduce/
// postscale passes produce for integers.
template <class T, ReduceOp Op>
void reduceScaledTyped(void* dst, const void* const* srcs, int n, size_t count, double pre,
                       double post) {
  T* d = static_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) d[i] = reduceElement<T, Op>(srcs, n, i, pre, post);
}

template <class T>
void reduceScaledOp(void* dst, const void* const* srcs, int n, size_t count, ReduceOp op,
                    double pre, double post) {
  switch (op) {
    case ReduceOp::kSum:
      return reduceScaledTyped<T, ReduceOp::kSum>(dst, srcs, n, count, pre, post);
    case ReduceOp::kMin:
      return reduceScaledTyped<T, ReduceOp::kMin>(dst, srcs, n, count, pre, post);
    case ReduceOp::kMax:
      return reduceScaledTyped<T, ReduceOp::kMax>(dst, srcs, n, count, pre, post);
    case ReduceOp::kProduct:
      return reduceScaledTyped<T, ReduceOp::kProduct>(dst, srcs, n, count, pre, post);
    case ReduceOp::kBand:
      return reduceScaledTyped<T, ReduceOp::kBand>(dst, srcs, n, count, pre, post);
    case ReduceOp::kBor:
      return reduceScaledTyped<T, ReduceOp::kBor>(dst, srcs, n, count, pre, post);
    case ReduceOp::kBxor:
      return reduceScaledTyped<T, ReduceOp::kBxor>(dst, srcs, n, count, pre, post);
    case ReduceOp::kAverage:  // dispatch.cc turned it into kSum
    case ReduceOp::kAdasum:
      contractViolation("scaled integer op", int(op));
  }
}

}  // namespace

void reduceScaledInt(void* dst, const void* const* srcs, int n, size_t count, DataType dtype,
                     ReduceOp op, double prescale, double postscale) {
  double pre = prescale, post = postscale;
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kBool: return reduceScaledOp<uint8_t>(dst, srcs, n, count, op, pre, post);
    case DataType::kInt8: return reduceScaledOp<int8_t>(dst, srcs, n, count, op, pre, post);
    case DataType::kUInt16: return reduceScaledOp<uint16_t>(dst, srcs, n, count, op, pre, post);
    case DataType::kInt16: return reduceScaledOp<int16_t>(dst, srcs, n, count, op, pre, post);
    case DataType::kInt32: return reduceScaledOp<int32_t>(dst, srcs, n, count, op, pre, post);
    case DataType::kInt64: return reduceScaledOp<int64_t>(dst, srcs, n, count, op, pre, post);
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
      contractViolation("scaled integer kernel dtype", int(dtype));  // dispatch.cc sends floats elsewhere
  }
}

}  // namespace lightcc::kernels
