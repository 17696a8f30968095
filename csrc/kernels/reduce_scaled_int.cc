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
    case ReduceOp::kMin:
      return reduceScaledTyped<T, ReduceOp::kMin>(dst, srcs, n, count, pre, post);
    case ReduceOp::kMax:
      return reduceScaledTyped<T, ReduceOp::kMax>(dst, srcs, n, count, pre, post);
    case ReduceOp::kProduct:
      return reduceScaledTyped<T, ReduceOp::kProduct>(dst, srcs, n, count, pre, post);
    default:
      return reduceScaledTyped<T, ReduceOp::kSum>(dst, srcs, n, count, pre, post);
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
    default: return;  // floating types never come here (see dispatch.cc)
  }
}

}  // namespace lightcc::kernels
