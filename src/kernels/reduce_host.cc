// reduceHost: checks the arguments, then hands them to the loops of the
// fastest instruction set this CPU has (reduce_isa.h), which dispatch once on
// (type, kind) to a vectorized loop (reduce_loops.h).
#include "kernels/reduce_host.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "hora/communicator.h"
#include "kernels/reduce_isa.h"

#if HORA_KERNELS_HAVE_AVX2_LOOPS
#include <cpuid.h>
#endif

namespace hora::kernels {
namespace {

[[noreturn]] void throwInvalid(const std::string& message) {
  throw Error(ErrorKind::InvalidArgument, "reduceHost: " + message);
}

void checkPointer(const void* pointer, const char* role, std::size_t elementSize,
                  DataType type) {
  if (pointer == nullptr) {
    throwInvalid(std::string(role) + " is null but count > 0");
  }
  if (reinterpret_cast<std::uintptr_t>(pointer) % elementSize != 0) {
    char address[32];
    std::snprintf(address, sizeof(address), "%p", pointer);
    throwInvalid(std::string(role) + " pointer " + address + " is not aligned to " +
                 std::to_string(elementSize) + " bytes, the size of one " + dataTypeName(type) +
                 " element");
  }
}

// dst may be exactly an input (in-place); a partial overlap would read
// elements the loop already overwrote, so it is refused.
void checkOverlap(const void* dst, const void* input, const char* role, std::size_t bytes) {
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const auto s = reinterpret_cast<std::uintptr_t>(input);
  if (d != s && d < s + bytes && s < d + bytes) {
    throwInvalid(std::string("dst partially overlaps ") + role +
                 " (only dst == local or dst == remote is allowed)");
  }
}

void validate(const ReduceSpec& spec, const void* dst, const void* local, const void* remote,
              std::size_t count) {
  const auto type = static_cast<int>(spec.type);
  if (type < 0 || type >= kNumDataTypes) {
    throwInvalid("invalid data type value " + std::to_string(type) + " (expected 0.." +
                 std::to_string(kNumDataTypes - 1) + ")");
  }
  const auto kind = static_cast<unsigned>(spec.kind);
  if (kind > static_cast<unsigned>(ReduceKind::SumPostDiv)) {
    throwInvalid("invalid reduce kind value " + std::to_string(kind) + " (expected 0.." +
                 std::to_string(static_cast<unsigned>(ReduceKind::SumPostDiv)) + ")");
  }
  if (spec.kind == ReduceKind::SumPostDiv && spec.scalarBits == 0) {
    throwInvalid("sumpostdiv needs a divisor of at least 1, got 0");
  }
  if (count == 0) return;
  const std::size_t elementSize = dataTypeSize(spec.type);
  checkPointer(dst, "dst", elementSize, spec.type);
  checkPointer(local, "local", elementSize, spec.type);
  if (remote != nullptr) checkPointer(remote, "remote", elementSize, spec.type);
  const std::size_t bytes = count * elementSize;
  checkOverlap(dst, local, "local", bytes);
  if (remote != nullptr) checkOverlap(dst, remote, "remote", bytes);
}

bool cpuHasAvx2Loops() {
#if HORA_KERNELS_HAVE_AVX2_LOOPS
  // __builtin_cpu_supports("avx2") also checks that the OS saves the AVX
  // registers. F16C is read from CPUID directly: not every compiler's
  // __builtin_cpu_supports knows its name.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool hasF16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  return __builtin_cpu_supports("avx2") && hasF16c;
#else
  return false;
#endif
}

}  // namespace

const char* hostIsaName(HostIsa isa) {
  switch (isa) {
    case HostIsa::Baseline: return "baseline";
    case HostIsa::Avx2: return "avx2";
  }
  return "invalid";
}

bool hostIsaAvailable(HostIsa isa) {
  switch (isa) {
    case HostIsa::Baseline: return true;
    case HostIsa::Avx2: {
      static const bool available = cpuHasAvx2Loops();
      return available;
    }
  }
  return false;
}

HostIsa bestHostIsa() {
  static const HostIsa best = hostIsaAvailable(HostIsa::Avx2) ? HostIsa::Avx2 : HostIsa::Baseline;
  return best;
}

void reduceHostWithIsa(HostIsa isa, const ReduceSpec& spec, void* dst, const void* local,
                       const void* remote, std::size_t count, bool finalize) {
  if (!hostIsaAvailable(isa)) {
    throw Error(ErrorKind::InvalidUsage, std::string("reduceHost: the ") + hostIsaName(isa) +
                                             " loops are not available on this CPU or build");
  }
  validate(spec, dst, local, remote, count);
  if (count == 0) return;
#if HORA_KERNELS_HAVE_AVX2_LOOPS
  if (isa == HostIsa::Avx2) return detail::reduceAvx2(spec, dst, local, remote, count, finalize);
#endif
  detail::reduceBaseline(spec, dst, local, remote, count, finalize);
}

void reduceHost(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                std::size_t count, bool finalize) {
  reduceHostWithIsa(bestHostIsa(), spec, dst, local, remote, count, finalize);
}

}  // namespace hora::kernels
