// Scaled integer reductions: a scalar loop through double, too rare to be worth vectorising.
#include <cstdint>

#include "kernels/reduce_ops.h"
#include "kernels/simd_dispatch.h"

namespace lightcc::kernels {
namespace {

// Per element: every source is scaled and truncated into T, the results combined in T (wrapping
// for sum/product) in source order, and the total scaled and truncated again, which is what
// Horovod's separate prescale/allreduce/postscale passes produce for integers. A factor of
// exactly 1 is skipped, not applied: int64 values beyond 2^53 would not survive a trip
// through double.
template <class T, ReduceOp Op>
void reduceScaledTyped(void* dst, const void* const* srcs, int n, size_t count, double pre,
                       double post) {
  T* d = static_cast<T*>(dst);
  const T* first = static_cast<const T*>(srcs[0]);
  for (size_t i = 0; i < count; ++i) {
    T acc = pre == 1.0 ? first[i] : scaleAcc(first[i], pre);
    for (int j = 1; j < n; ++j) {
      T x = static_cast<const T*>(srcs[j])[i];
      acc = combineAs<Op>(acc, pre == 1.0 ? x : scaleAcc(x, pre));
    }
    d[i] = post == 1.0 ? acc : scaleAcc(acc, post);
  }
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
    case DataType::kInt32: return reduceScaledOp<int32_t>(dst, srcs, n, count, op, pre, post);
    case DataType::kInt64: return reduceScaledOp<int64_t>(dst, srcs, n, count, op, pre, post);
    default: return;  // floating types never come here (see dispatch.cc)
  }
}

}  // namespace lightcc::kernels
