// Printable names of data types and reduction ops, for error messages and logs.
#include "common/dtype.h"

namespace lightcc {

// Names follow numpy/torch spelling so messages read like the user's own code.
const char* dtypeName(DataType t) {
  switch (t) {
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kBool: return "bool";
    case DataType::kInt16: return "int16";
    case DataType::kUInt16: return "uint16";
  }
  return "unknown-dtype";
}

// Horovod's capitalised op names (hvd.Average, hvd.Sum, ...).
const char* reduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kAverage: return "Average";
    case ReduceOp::kSum: return "Sum";
    case ReduceOp::kAdasum: return "Adasum";
    case ReduceOp::kMin: return "Min";
    case ReduceOp::kMax: return "Max";
    case ReduceOp::kProduct: return "Product";
    case ReduceOp::kBand: return "Band";
    case ReduceOp::kBor: return "Bor";
    case ReduceOp::kBxor: return "Bxor";
  }
  return "unknown-op";
}

}  // namespace lightcc
