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
#ifdef LIGHTCC_TEST_EXTRA_DTYPE
  // tests/single/test_enum_switches.py only: a value no switch handles yet, as the next one.
  kTestDtype = 11,
#endif
};
#ifdef LIGHTCC_TEST_EXTRA_DTYPE
constexpr int kNumDataTypes = 12;
static_assert(static_cast<int>(DataType::kTestDtype) + 1 == kNumDataTypes, "kNumDataTypes");
#else
constexpr int kNumDataTypes = 11;
static_assert(static_cast<int>(DataType::kUInt16) + 1 == kNumDataTypes, "kNumDataTypes counts DataType");
#endif

// Values 0..5 match Horovod's op constants (Average=0, Sum=1, Adasum=2, Min=3, Max=4,
// Product=5); the bitwise ops (integer and bool tensors only) follow. Wire codes and the Python
// contract (lightcc/common/ops.py).
enum class ReduceOp : uint8_t {
  kAverage = 0,
  kSum = 1,
  kAdasum = 2,
  kMin = 3,
  kMax = 4,
  kProduct = 5,
  kBand = 6,
  kBor = 7,
  kBxor = 8,
#ifdef LIGHTCC_TEST_EXTRA_REDUCE_OP
  // tests/single/test_enum_switches.py only: a value no switch handles yet, as the next one.
  kTestReduceOp = 9,
#endif
};
#ifdef LIGHTCC_TEST_EXTRA_REDUCE_OP
constexpr int kNumReduceOps = 10;
static_assert(static_cast<int>(ReduceOp::kTestReduceOp) + 1 == kNumReduceOps, "kNumReduceOps");
#else
constexpr int kNumReduceOps = 9;
static_assert(static_cast<int>(ReduceOp::kBxor) + 1 == kNumReduceOps, "kNumReduceOps counts ReduceOp");
#endif

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
inline bool isValidReduceOp(int code) { return code >= 0 && code < kNumReduceOps; }
inline bool isFloatType(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat32 ||
         t == DataType::kFloat64;
}

// Band, Bor and Bxor: defined on the bits of integer and bool tensors only.
constexpr bool isBitwiseOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      return true;
    case ReduceOp::kAverage:
    case ReduceOp::kSum:
    case ReduceOp::kAdasum:
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kProduct:
      return false;
  }
  return false;
}

const char* dtypeName(DataType t);
const char* reduceOpName(ReduceOp op);

}  // namespace lightcc
