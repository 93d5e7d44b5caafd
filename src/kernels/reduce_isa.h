// The instruction sets reduceHost has loops for, and the way to pick one.
//
// hora is built for the baseline of its target (x86-64: SSE2), so that one
// binary runs on every machine. On x86-64 the loops are compiled a second
// time for AVX2 (with F16C, whose instructions convert float16 in hardware),
// and reduceHost takes that copy on CPUs that have both: it runs the
// conversion-heavy types (float16, bfloat16, fp8) several times faster, and
// every other type twice as wide.
//
// The AVX2 copy is made with per-function target attributes, not with a
// -mavx2 flag on a source file: with the flag, any inline function the file
// instantiates (std::vector's, say) would be compiled for AVX2 too, and the
// linker could keep that copy for the whole program, which would then fail
// on CPUs without AVX2.
#pragma once

#include <cstddef>

#include "kernels/reduce_host.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HORA_KERNELS_HAVE_AVX2_LOOPS 1
#else
#define HORA_KERNELS_HAVE_AVX2_LOOPS 0
#endif

namespace hora::kernels {

enum class HostIsa { Baseline, Avx2 };

const char* hostIsaName(HostIsa isa);

// Whether this build has loops for `isa` and this CPU can run them.
bool hostIsaAvailable(HostIsa isa);

// The fastest available instruction set (what reduceHost uses).
HostIsa bestHostIsa();

// reduceHost with a chosen instruction set (tests compare them all);
// throws InvalidUsage if `isa` is not available.
void reduceHostWithIsa(HostIsa isa, const ReduceSpec& spec, void* dst, const void* local,
                       const void* remote, std::size_t count, bool finalize);

namespace detail {

// The arguments of reduceHostMany (kernels/reduce_many.h), validated, plus
// the size of the blocks it works in.
struct ManyBuffers {
  void* const* outputs;
  int numOutputs;
  const void* const* inputs;
  int numInputs;
  std::size_t count;
  bool streaming;
  std::size_t blockBytes;  // a multiple of 64, at most kMaxManyBlockBytes
};

// The largest block reduceHostMany's loops can work in (their scratch space
// lives on the stack).
inline constexpr std::size_t kMaxManyBlockBytes = 16 * 1024;

// Per-instruction-set entry points; arguments already validated.
void reduceBaseline(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                    std::size_t count, bool finalize);
void reduceManyBaseline(const ReduceSpec& spec, const ManyBuffers& buffers);
#if HORA_KERNELS_HAVE_AVX2_LOOPS
void reduceAvx2(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                std::size_t count, bool finalize);
void reduceManyAvx2(const ReduceSpec& spec, const ManyBuffers& buffers);
#endif
}  // namespace detail

}  // namespace hora::kernels
