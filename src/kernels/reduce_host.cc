// reduceHost: checks the arguments (reduce_arguments.h), then hands them to the loops of the
// fastest instruction set this CPU has (reduce_isa.h), which dispatch once on
// (type, kind) to a vectorized loop (reduce_loops.h). reduceHostUnchecked
// goes straight to the loops.
#include "kernels/reduce_host.h"

#include <string>

#include "hora/error.h"
#include "kernels/reduce_arguments.h"
#include "kernels/reduce_isa.h"

#if HORA_KERNELS_HAVE_AVX2_LOOPS
#include <cpuid.h>
#endif

namespace hora::kernels {
namespace {

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

// The loops of `isa` (available) on checked arguments.
void runLoops(HostIsa isa, const ReduceSpec& spec, void* dst, const void* local,
              const void* remote, std::size_t count, bool finalize) {
  if (count == 0) return;
#if HORA_KERNELS_HAVE_AVX2_LOOPS
  if (isa == HostIsa::Avx2) return detail::reduceAvx2(spec, dst, local, remote, count, finalize);
#endif
  detail::reduceBaseline(spec, dst, local, remote, count, finalize);
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
  checkReduceArguments("reduceHost", spec, dst, local, remote, count);
  runLoops(isa, spec, dst, local, remote, count, finalize);
}

void reduceHost(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                std::size_t count, bool finalize) {
  reduceHostWithIsa(bestHostIsa(), spec, dst, local, remote, count, finalize);
}

void reduceHostUnchecked(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                         std::size_t count, bool finalize) {
  runLoops(bestHostIsa(), spec, dst, local, remote, count, finalize);
}

}  // namespace hora::kernels
