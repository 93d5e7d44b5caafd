#include "element_values.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace hora::chaos {

std::size_t elementBytes(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

double loadElement(const void* buffer, ncclDataType_t type, std::size_t index) {
  switch (type) {
    case ncclUint8: return static_cast<const std::uint8_t*>(buffer)[index];
    case ncclInt32: return static_cast<const std::int32_t*>(buffer)[index];
    case ncclInt64: return static_cast<double>(static_cast<const std::int64_t*>(buffer)[index]);
    case ncclFloat32: return static_cast<const float*>(buffer)[index];
    default: return static_cast<const double*>(buffer)[index];
  }
}

void storeElement(void* buffer, ncclDataType_t type, std::size_t index, double value) {
  switch (type) {
    case ncclUint8: static_cast<std::uint8_t*>(buffer)[index] = static_cast<std::uint8_t>(value); break;
    case ncclInt32: static_cast<std::int32_t*>(buffer)[index] = static_cast<std::int32_t>(value); break;
    case ncclInt64: static_cast<std::int64_t*>(buffer)[index] = static_cast<std::int64_t>(value); break;
    case ncclFloat32: static_cast<float*>(buffer)[index] = static_cast<float>(value); break;
    default: static_cast<double*>(buffer)[index] = value; break;
  }
}

double inputValue(int rank, std::size_t index, std::size_t callIndex) {
  return static_cast<double>((static_cast<std::size_t>(rank) * 7 + index * 3 + callIndex) % 50 + 1);
}

namespace {
double reduceOverRanks(ncclRedOp_t op, int nranks, std::size_t index, std::size_t callIndex) {
  double result = inputValue(0, index, callIndex);
  for (int r = 1; r < nranks; ++r) {
    const double v = inputValue(r, index, callIndex);
    result = op == ncclSum ? result + v : op == ncclMax ? std::max(result, v) : std::min(result, v);
  }
  return result;
}
}  // namespace

std::vector<double> expectedOutput(const Call& call, std::size_t callIndex, int rank, int nranks) {
  std::vector<double> out;
  switch (call.kind) {
    case CallKind::AllReduce:
      for (std::size_t j = 0; j < call.count; ++j) out.push_back(reduceOverRanks(call.op, nranks, j, callIndex));
      break;
    case CallKind::Reduce:
      if (rank == call.root)
        for (std::size_t j = 0; j < call.count; ++j) out.push_back(reduceOverRanks(call.op, nranks, j, callIndex));
      break;
    case CallKind::ReduceScatter:
      for (std::size_t j = 0; j < call.count; ++j)
        out.push_back(reduceOverRanks(call.op, nranks, rank * call.count + j, callIndex));
      break;
    case CallKind::AllGather:
      for (int q = 0; q < nranks; ++q)
        for (std::size_t j = 0; j < call.count; ++j) out.push_back(inputValue(q, j, callIndex));
      break;
    case CallKind::Broadcast:
      for (std::size_t j = 0; j < call.count; ++j) out.push_back(inputValue(call.root, j, callIndex));
      break;
  }
  return out;
}

}  // namespace hora::chaos
