// Exact integer division for Average over integer tensors (rare, so a plain loop).
#include <cstdint>

#include "kernels/reduce.h"

namespace lightcc::kernels {
namespace {
template <typename T>
void divideAll(T* p, size_t n, int64_t d) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<int64_t>(p[i]) / d);
}
}  // namespace

void divideIntegers(void* data, size_t count, DataType dtype, int64_t divisor) {
  if (divisor == 1) return;
  switch (dtype) {
    case DataType::kUInt8: divideAll(static_cast<uint8_t*>(data), count, divisor); break;
    case DataType::kBool: divideAll(static_cast<uint8_t*>(data), count, divisor); break;
    case DataType::kInt8: divideAll(static_cast<int8_t*>(data), count, divisor); break;
    case DataType::kUInt16: divideAll(static_cast<uint16_t*>(data), count, divisor); break;
    case DataType::kInt16: divideAll(static_cast<int16_t*>(data), count, divisor); break;
    case DataType::kInt32: divideAll(static_cast<int32_t*>(data), count, divisor); break;
    case DataType::kInt64: divideAll(static_cast<int64_t*>(data), count, divisor); break;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
      break;  // floats divide through postscale instead
  }
}

}  // namespace lightcc::kernels
