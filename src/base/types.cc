#include "hora/types.h"

namespace hora {

std::size_t dataTypeSize(DataType type) {
  switch (type) {
    case DataType::Int8:
    case DataType::Uint8:
    case DataType::Float8e4m3:
    case DataType::Float8e5m2:
      return 1;
    case DataType::Float16:
    case DataType::Bfloat16:
      return 2;
    case DataType::Int32:
    case DataType::Uint32:
    case DataType::Float32:
      return 4;
    case DataType::Int64:
    case DataType::Uint64:
    case DataType::Float64:
      return 8;
  }
  return 0;
}

const char* dataTypeName(DataType type) {
  // The names nccl-tests prints in its "type" column.
  static const char* const kNames[kNumDataTypes] = {"int8",   "uint8",  "int32",    "uint32",
                                                    "int64",  "uint64", "half",     "float",
                                                    "double", "bfloat16", "f8e4m3", "f8e5m2"};
  int index = static_cast<int>(type);
  return index >= 0 && index < kNumDataTypes ? kNames[index] : "invalid";
}

const char* redOpName(RedOp op) {
  static const char* const kNames[kNumRedOps] = {"sum", "prod", "max", "min", "avg"};
  int index = static_cast<int>(op);
  return index >= 0 && index < kNumRedOps ? kNames[index] : "invalid";
}

bool isFloatingType(DataType type) {
  switch (type) {
    case DataType::Float16:
    case DataType::Float32:
    case DataType::Float64:
    case DataType::Bfloat16:
    case DataType::Float8e4m3:
    case DataType::Float8e5m2:
      return true;
    default:
      return false;
  }
}

}  // namespace hora
