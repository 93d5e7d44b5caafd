// The twelve element types of nccl.h, described independently of hora: the
// tests compute their expected results with this code, so a conversion bug
// inside hora cannot hide behind the same bug in the reference.
//
// An element travels through the reference code as its bit pattern in the
// low bytes of a uint64_t; floating formats are decoded to double (every
// value of every format is a double) and encoded back only when exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nccl.h"

namespace hora_coll_test {

enum class Family { Signed, Unsigned, Floating };

struct ElementType {
  ncclDataType_t id;
  const char* name;
  std::size_t size;  // bytes
  Family family;
  // Floating formats only: field widths, and whether the all-ones exponent
  // means infinity/NaN (IEEE) or, as in fp8 e4m3, only S.1111.111 is NaN and
  // the rest of that binade holds ordinary numbers.
  int exponentBits = 0;
  int mantissaBits = 0;
  bool ieeeSpecials = true;

  int bits() const { return static_cast<int>(size * 8); }
  std::uint64_t mask() const { return bits() == 64 ? ~0ull : (1ull << bits()) - 1; }
  bool isFloating() const { return family == Family::Floating; }
};

// All types, in nccl.h order.
const std::vector<ElementType>& allElementTypes();
const ElementType& elementType(ncclDataType_t id);

// Element `index` of a buffer of this type, as bits (and back).
std::uint64_t loadBits(const ElementType& type, const void* base, std::size_t index);
void storeBits(const ElementType& type, void* base, std::size_t index, std::uint64_t bits);

// Integer families: the value of a bit pattern (sign-extended for Signed).
std::int64_t signedValue(const ElementType& type, std::uint64_t bits);

// Floating family.
double decodeFloat(const ElementType& type, std::uint64_t bits);  // NaN for NaN patterns
bool isFiniteBits(const ElementType& type, std::uint64_t bits);
// The pattern of `value`, or nullopt if the format cannot hold it exactly.
std::optional<std::uint64_t> encodeExact(const ElementType& type, double value);

// "0x1f (3.5)": bits and, for floating types, the value, for messages.
std::string describeBits(const ElementType& type, std::uint64_t bits);

}  // namespace hora_coll_test
