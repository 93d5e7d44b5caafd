#include "data_types.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "minifloat.h"

namespace hora::perf {
namespace {

// 2^20 for the wide types: large enough for varied data, small enough that
// sums over thousands of ranks stay exact in float.
constexpr double kWideLimit = 1 << 20;

constexpr std::array<DataTypeInfo, ncclNumTypes> kTypes = {{
    {ncclInt8, "int8", 1, ValueClass::SignedInteger, 100, 0, 0},
    {ncclUint8, "uint8", 1, ValueClass::UnsignedInteger, 200, 0, 0},
    {ncclInt32, "int32", 4, ValueClass::SignedInteger, kWideLimit, 0, 0},
    {ncclUint32, "uint32", 4, ValueClass::UnsignedInteger, kWideLimit, 0, 0},
    {ncclInt64, "int64", 8, ValueClass::SignedInteger, kWideLimit, 0, 0},
    {ncclUint64, "uint64", 8, ValueClass::UnsignedInteger, kWideLimit, 0, 0},
    {ncclFloat16, "half", 2, ValueClass::Floating, 2048, 10, 0x1p-24},
    {ncclFloat32, "float", 4, ValueClass::Floating, kWideLimit, 23, 0x1p-149},
    {ncclFloat64, "double", 8, ValueClass::Floating, kWideLimit, 52, 0x1p-1074},
    {ncclBfloat16, "bfloat16", 2, ValueClass::Floating, 256, 7, 0x1p-133},
    {ncclFloat8e4m3, "f8e4m3", 1, ValueClass::Floating, 16, 3, 0x1p-9},
    {ncclFloat8e5m2, "f8e5m2", 1, ValueClass::Floating, 8, 2, 0x1p-16},
}};

struct Alias {
  std::string_view name;
  ncclDataType_t type;
};
constexpr Alias kAliases[] = {
    {"char", ncclInt8},    {"int", ncclInt32},       {"uint", ncclUint32},        {"float16", ncclFloat16},
    {"fp16", ncclFloat16}, {"float32", ncclFloat32}, {"fp32", ncclFloat32},       {"float64", ncclFloat64},
    {"fp64", ncclFloat64}, {"bf16", ncclBfloat16},   {"fp8e4m3", ncclFloat8e4m3}, {"fp8e5m2", ncclFloat8e5m2},
};

template <typename T>
T loadAs(const void* base, std::size_t index) {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void storeAs(void* base, std::size_t index, T value) {
  std::memcpy(static_cast<char*>(base) + index * sizeof(T), &value, sizeof(T));
}

}  // namespace

std::span<const DataTypeInfo> allDataTypes() { return kTypes; }

const DataTypeInfo& dataTypeInfo(ncclDataType_t type) {
  const int index = static_cast<int>(type);
  if (index < 0 || index >= ncclNumTypes) {
    throw std::out_of_range("unknown ncclDataType_t value " + std::to_string(index));
  }
  return kTypes[index];
}

std::optional<ncclDataType_t> parseDataTypeName(std::string_view name) {
  for (const DataTypeInfo& info : kTypes) {
    if (name == info.name) return info.type;
  }
  for (const Alias& alias : kAliases) {
    if (name == alias.name) return alias.type;
  }
  return std::nullopt;
}

double loadElement(ncclDataType_t type, const void* base, std::size_t index) {
  switch (type) {
    case ncclInt8: return loadAs<std::int8_t>(base, index);
    case ncclUint8: return loadAs<std::uint8_t>(base, index);
    case ncclInt32: return loadAs<std::int32_t>(base, index);
    case ncclUint32: return loadAs<std::uint32_t>(base, index);
    case ncclInt64: return static_cast<double>(loadAs<std::int64_t>(base, index));
    case ncclUint64: return static_cast<double>(loadAs<std::uint64_t>(base, index));
    case ncclFloat16: return decodeMinifloat(kHalfFormat, loadAs<std::uint16_t>(base, index));
    case ncclFloat32: return loadAs<float>(base, index);
    case ncclFloat64: return loadAs<double>(base, index);
    case ncclBfloat16: return decodeMinifloat(kBfloat16Format, loadAs<std::uint16_t>(base, index));
    case ncclFloat8e4m3: return decodeMinifloat(kFloat8e4m3Format, loadAs<std::uint8_t>(base, index));
    case ncclFloat8e5m2: return decodeMinifloat(kFloat8e5m2Format, loadAs<std::uint8_t>(base, index));
    default: break;
  }
  throw std::out_of_range("unknown ncclDataType_t value " + std::to_string(static_cast<int>(type)));
}

void storeElement(ncclDataType_t type, void* base, std::size_t index, double value) {
  switch (type) {
    case ncclInt8: return storeAs(base, index, static_cast<std::int8_t>(value));
    case ncclUint8: return storeAs(base, index, static_cast<std::uint8_t>(value));
    case ncclInt32: return storeAs(base, index, static_cast<std::int32_t>(value));
    case ncclUint32: return storeAs(base, index, static_cast<std::uint32_t>(value));
    case ncclInt64: return storeAs(base, index, static_cast<std::int64_t>(value));
    case ncclUint64: return storeAs(base, index, static_cast<std::uint64_t>(value));
    case ncclFloat16:
      return storeAs(base, index, static_cast<std::uint16_t>(encodeMinifloat(kHalfFormat, value)));
    case ncclFloat32: return storeAs(base, index, static_cast<float>(value));
    case ncclFloat64: return storeAs(base, index, value);
    case ncclBfloat16:
      return storeAs(base, index, static_cast<std::uint16_t>(encodeMinifloat(kBfloat16Format, value)));
    case ncclFloat8e4m3:
      return storeAs(base, index, static_cast<std::uint8_t>(encodeMinifloat(kFloat8e4m3Format, value)));
    case ncclFloat8e5m2:
      return storeAs(base, index, static_cast<std::uint8_t>(encodeMinifloat(kFloat8e5m2Format, value)));
    default: break;
  }
  throw std::out_of_range("unknown ncclDataType_t value " + std::to_string(static_cast<int>(type)));
}

void poisonBuffer(void* base, std::size_t bytes) { std::memset(base, 0xff, bytes); }

}  // namespace hora::perf
