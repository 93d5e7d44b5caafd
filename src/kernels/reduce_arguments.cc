#include "kernels/reduce_arguments.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "hora/error.h"

namespace hora::kernels {
namespace {

[[noreturn]] void throwInvalid(const char* caller, const std::string& message) {
  throw Error(ErrorKind::InvalidArgument, std::string(caller) + ": " + message);
}

void checkPointer(const char* caller, const void* pointer, const char* role,
                  std::size_t elementSize, DataType type) {
  if (pointer == nullptr) {
    throwInvalid(caller, std::string(role) + " is null but count > 0");
  }
  // Element sizes are powers of two: a mask, not a division (this runs on
  // every reduction call, small all-reduces included).
  if ((reinterpret_cast<std::uintptr_t>(pointer) & (elementSize - 1)) != 0) {
    char address[32];
    std::snprintf(address, sizeof(address), "%p", pointer);
    throwInvalid(caller, std::string(role) + " pointer " + address + " is not aligned to " +
                             std::to_string(elementSize) + " bytes, the size of one " +
                             dataTypeName(type) + " element");
  }
}

// dst may be exactly an input (in-place); a partial overlap would read
// elements the loop already overwrote, so it is refused.
void checkOverlap(const char* caller, const void* dst, const void* input, const char* role,
                  std::size_t bytes) {
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const auto s = reinterpret_cast<std::uintptr_t>(input);
  if (d != s && d < s + bytes && s < d + bytes) {
    throwInvalid(caller, std::string("dst partially overlaps ") + role +
                             " (only dst == local or dst == remote is allowed)");
  }
}

}  // namespace

void checkReduceArguments(const char* caller, const ReduceSpec& spec, const void* dst,
                          const void* local, const void* remote, std::size_t count) {
  const auto type = static_cast<int>(spec.type);
  if (type < 0 || type >= kNumDataTypes) {
    throwInvalid(caller, "invalid data type value " + std::to_string(type) + " (expected 0.." +
                             std::to_string(kNumDataTypes - 1) + ")");
  }
  const auto kind = static_cast<unsigned>(spec.kind);
  if (kind > static_cast<unsigned>(ReduceKind::SumPostDiv)) {
    throwInvalid(caller, "invalid reduce kind value " + std::to_string(kind) + " (expected 0.." +
                             std::to_string(static_cast<unsigned>(ReduceKind::SumPostDiv)) + ")");
  }
  if (spec.kind == ReduceKind::SumPostDiv && spec.scalarBits == 0) {
    throwInvalid(caller, "sumpostdiv needs a divisor of at least 1, got 0");
  }
  if (spec.scalarAt != nullptr) {
    // Only the executors read a scalar where it lies, as an operation runs.
    throwInvalid(caller, "the premulsum scalar must be given by value (scalarBits), not by address");
  }
  if (count == 0) return;
  const std::size_t elementSize = dataTypeSize(spec.type);
  checkPointer(caller, dst, "dst", elementSize, spec.type);
  checkPointer(caller, local, "local", elementSize, spec.type);
  if (remote != nullptr) checkPointer(caller, remote, "remote", elementSize, spec.type);
  const std::size_t bytes = count * elementSize;
  checkOverlap(caller, dst, local, "local", bytes);
  if (remote != nullptr) checkOverlap(caller, dst, remote, "remote", bytes);
}

}  // namespace hora::kernels
