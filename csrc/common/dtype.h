// Data types and reduction ops the engine understands, with their wire codes and sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lightcc {

// Codes are part of the Python contract (lightcc/common/dtypes.py) and the wire format.
enum class DataType : uint8_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat16 = 4,
  kBFloat16 = 5,
  kFloat32 = 6,
  kFloat64 = 7,
  kBool = 8,  // reduced as uint8 with max (or) / min (and) / sum saturating is not defined
  kInt16 = 9,
  kUInt16 = 10,
};
constexpr int kNumDataTypes = 11;

// Values match Horovod's op constants (Average=0, Sum=1, Adasum=2, Min=3, Max=4, Product=5).
enum class ReduceOp : uint8_t {
  kAverage = 0,
  kSum = 1,
  kAdasum = 2,
  kMin = 3,
  kMax = 4,
  kProduct = 5,
};

inline size_t dtypeSize(DataType t) {
  switch (t) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kBool:
      return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kInt16:
    case DataType::kUInt16:
      return 2;
    case DataType::kInt32:
    case DataType::kFloat32:
      return 4;
    case DataType::kInt64:
    case DataType::kFloat64:
      return 8;
  }
  return 0;
}

inline bool isValidDataType(int code) { return code >= 0 && code < kNumDataTypes; }
inline bool isFloatType(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat32 ||
         t == DataType::kFloat64;
}

const char* dtypeName(DataType t);
const char* reduceOpName(ReduceOp op);

}  // namespace lightcc
