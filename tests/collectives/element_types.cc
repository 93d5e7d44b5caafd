#include "element_types.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace hora_coll_test {

const std::vector<ElementType>& allElementTypes() {
  static const std::vector<ElementType> types = {
      {ncclInt8, "int8", 1, Family::Signed},
      {ncclUint8, "uint8", 1, Family::Unsigned},
      {ncclInt32, "int32", 4, Family::Signed},
      {ncclUint32, "uint32", 4, Family::Unsigned},
      {ncclInt64, "int64", 8, Family::Signed},
      {ncclUint64, "uint64", 8, Family::Unsigned},
      {ncclFloat16, "half", 2, Family::Floating, 5, 10, true},
      {ncclFloat32, "float", 4, Family::Floating, 8, 23, true},
      {ncclFloat64, "double", 8, Family::Floating, 11, 52, true},
      {ncclBfloat16, "bfloat16", 2, Family::Floating, 8, 7, true},
      {ncclFloat8e4m3, "fp8_e4m3", 1, Family::Floating, 4, 3, false},
      {ncclFloat8e5m2, "fp8_e5m2", 1, Family::Floating, 5, 2, true},
  };
  return types;
}

const ElementType& elementType(ncclDataType_t id) {
  for (const auto& type : allElementTypes())
    if (type.id == id) return type;
  throw std::invalid_argument("unknown ncclDataType_t " + std::to_string(static_cast<int>(id)));
}

std::uint64_t loadBits(const ElementType& type, const void* base, std::size_t index) {
  std::uint64_t bits = 0;  // little-endian host: the low bytes hold the element
  const char* at = static_cast<const char*>(base) + index * type.size;
  switch (type.size) {
    case 1: std::memcpy(&bits, at, 1); break;
    case 2: std::memcpy(&bits, at, 2); break;
    case 4: std::memcpy(&bits, at, 4); break;
    default: std::memcpy(&bits, at, 8); break;
  }
  return bits;
}

void storeBits(const ElementType& type, void* base, std::size_t index, std::uint64_t bits) {
  char* at = static_cast<char*>(base) + index * type.size;
  switch (type.size) {  // fixed-size copies compile to single stores
    case 1: std::memcpy(at, &bits, 1); break;
    case 2: std::memcpy(at, &bits, 2); break;
    case 4: std::memcpy(at, &bits, 4); break;
    default: std::memcpy(at, &bits, 8); break;
  }
}

std::int64_t signedValue(const ElementType& type, std::uint64_t bits) {
  bits &= type.mask();
  if (type.family == Family::Signed && type.bits() < 64 && (bits >> (type.bits() - 1)) != 0)
    bits |= ~type.mask();  // sign extension
  return static_cast<std::int64_t>(bits);
}

namespace {
struct Fields {
  bool negative;
  std::uint64_t exponent;
  std::uint64_t mantissa;
};

Fields split(const ElementType& type, std::uint64_t bits) {
  const int m = type.mantissaBits, e = type.exponentBits;
  return Fields{((bits >> (m + e)) & 1) != 0, (bits >> m) & ((1ull << e) - 1),
                bits & ((1ull << m) - 1)};
}

std::uint64_t maxExponentField(const ElementType& type) { return (1ull << type.exponentBits) - 1; }
int bias(const ElementType& type) { return (1 << (type.exponentBits - 1)) - 1; }

bool isNanBits(const ElementType& type, std::uint64_t bits) {
  Fields f = split(type, bits);
  if (f.exponent != maxExponentField(type)) return false;
  if (type.ieeeSpecials) return f.mantissa != 0;
  return f.mantissa == (1ull << type.mantissaBits) - 1;
}
}  // namespace

bool isFiniteBits(const ElementType& type, std::uint64_t bits) {
  if (isNanBits(type, bits)) return false;
  return !(type.ieeeSpecials && split(type, bits).exponent == maxExponentField(type));
}

double decodeFloat(const ElementType& type, std::uint64_t bits) {
  // float and double are the host's own formats: the fast way, for the big
  // buffers (the general path below gives the same values).
  if (type.id == ncclFloat32) return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
  if (type.id == ncclFloat64) return std::bit_cast<double>(bits);
  Fields f = split(type, bits);
  double magnitude;
  if (isNanBits(type, bits)) {
    magnitude = std::nan("");
  } else if (type.ieeeSpecials && f.exponent == maxExponentField(type)) {
    magnitude = INFINITY;
  } else if (f.exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(f.mantissa), 1 - bias(type) - type.mantissaBits);
  } else {
    magnitude = std::ldexp(static_cast<double>(f.mantissa + (1ull << type.mantissaBits)),
                           static_cast<int>(f.exponent) - bias(type) - type.mantissaBits);
  }
  return f.negative ? -magnitude : magnitude;
}

std::optional<std::uint64_t> encodeExact(const ElementType& type, double value) {
  if (!type.isFloating() || !std::isfinite(value)) return std::nullopt;
  if (type.id == ncclFloat32) {
    if (std::fabs(value) > std::numeric_limits<float>::max()) return std::nullopt;
    const float narrow = static_cast<float>(value);
    if (static_cast<double>(narrow) != value) return std::nullopt;
    return std::bit_cast<std::uint32_t>(narrow);
  }
  if (type.id == ncclFloat64) return std::bit_cast<std::uint64_t>(value);
  const int m = type.mantissaBits;
  const std::uint64_t sign = std::signbit(value) ? 1ull << (m + type.exponentBits) : 0;
  const double magnitude = std::fabs(value);
  if (magnitude == 0) return sign;
  int binade = std::ilogb(magnitude);  // magnitude = 1.f * 2^binade
  const int minNormal = 1 - bias(type);
  std::uint64_t exponentField;
  double units;  // the significand in units of the last place
  if (binade < minNormal) {
    exponentField = 0;
    units = std::ldexp(magnitude, m - minNormal);
  } else {
    exponentField = static_cast<std::uint64_t>(binade + bias(type));
    units = std::ldexp(magnitude, m - binade) - std::ldexp(1.0, m);
  }
  if (units != std::floor(units)) return std::nullopt;  // needs more mantissa bits
  if (exponentField > maxExponentField(type)) return std::nullopt;
  std::uint64_t bits = sign | (exponentField << m) | static_cast<std::uint64_t>(units);
  if (!isFiniteBits(type, bits)) return std::nullopt;  // beyond the largest finite value
  return bits;
}

std::string describeBits(const ElementType& type, std::uint64_t bits) {
  char text[96];
  bits &= type.mask();
  if (type.isFloating())
    std::snprintf(text, sizeof(text), "0x%llx (%.17g)", static_cast<unsigned long long>(bits),
                  decodeFloat(type, bits));
  else if (type.family == Family::Signed)
    std::snprintf(text, sizeof(text), "0x%llx (%lld)", static_cast<unsigned long long>(bits),
                  static_cast<long long>(signedValue(type, bits)));
  else
    std::snprintf(text, sizeof(text), "0x%llx (%llu)", static_cast<unsigned long long>(bits),
                  static_cast<unsigned long long>(bits));
  return text;
}

}  // namespace hora_coll_test
