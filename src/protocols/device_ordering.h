// The memory-ordering policy for protocols run inside CUDA kernels; the
// counterpart of host_ordering.h (read that first: the same calls, the same
// reasons). Compiled only by nvcc.
//
// Every access to memory the other side reads or writes uses the .sys
// scope: the peer may be the CPU, or another GPU over NVLink or PCIe, and a
// narrower scope (.gpu) would promise nothing to them.
//  - loadAcquire / storeRelease: ld.acquire.sys / st.release.sys (sm_70+).
//    st.release carries the fence that older code wrote as
//    __threadfence_system() followed by a volatile store, so no separate
//    fence is needed. When several threads of a block wrote a slot, they
//    meet at __syncthreads() first and one of them publishes: the barrier
//    orders their writes before that thread's release, and release is
//    cumulative, so the peer that acquires the counter sees them all.
//    Likewise one thread acquires and a barrier passes that on to the
//    block's readers.
//  - loadRelaxed / storeRelaxed, loadLine / storeLine, loadFlag / storeFlag:
//    ld.relaxed.sys / st.relaxed.sys: strong (never torn, never cached out
//    of the peer's sight) but unordered. An aligned 8-byte access is
//    single-copy atomic, which is all an LL line needs.
//  - loadFlagAcquire / storeFlagRelease: ld.acquire.sys / st.release.sys
//    on a 4-byte flag that orders what was written before it.
//  - loadLinePair / storeLinePair: two adjacent LL lines in one 16-byte
//    access (ld/st.volatile.v2, which the memory model treats as relaxed at
//    system scope). A vector access is two 8-byte accesses, each single-copy
//    atomic, in no promised order: a reader checks both lines' flags.
//  - relax(spins): nothing for the first polls, then __nanosleep, so that
//    spinning warps leave issue slots to the warps doing work.
//  - now(): %globaltimer, nanoseconds, the unit of every deadline passed to
//    a protocol running under this policy.
// The "memory" clobbers stop the compiler from moving other memory accesses
// across these instructions, which the hardware ordering alone cannot do.
#pragma once

#if defined(__CUDACC__)

#include <cstdint>

namespace hora::protocols {

struct DeviceOrdering {
  __device__ static std::uint64_t loadAcquire(const std::uint64_t* p) {
    std::uint64_t v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
  }
  __device__ static void storeRelease(std::uint64_t* p, std::uint64_t v) {
    asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
  }
  __device__ static std::uint64_t loadRelaxed(const std::uint64_t* p) {
    std::uint64_t v;
    asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
  }
  __device__ static void storeRelaxed(std::uint64_t* p, std::uint64_t v) {
    asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
  }

  __device__ static std::uint64_t loadLine(const std::uint64_t* line) { return loadRelaxed(line); }
  __device__ static void storeLine(std::uint64_t* line, std::uint64_t v) { storeRelaxed(line, v); }

  // line must be 16-byte aligned.
  __device__ static void loadLinePair(const std::uint64_t* line, std::uint64_t* first, std::uint64_t* second) {
    asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(*first), "=l"(*second) : "l"(line) : "memory");
  }
  __device__ static void storeLinePair(std::uint64_t* line, std::uint64_t first, std::uint64_t second) {
    asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" ::"l"(line), "l"(first), "l"(second) : "memory");
  }

  __device__ static std::uint32_t loadFlag(const std::uint32_t* p) {
    std::uint32_t v;
    asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
  }
  __device__ static void storeFlag(std::uint32_t* p, std::uint32_t v) {
    asm volatile("st.relaxed.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
  }
  // A flag that says what came before it (an abort line written after the
  // block's last piece): release to write, acquire to read.
  __device__ static std::uint32_t loadFlagAcquire(const std::uint32_t* p) {
    std::uint32_t v;
    asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
  }
  __device__ static void storeFlagRelease(std::uint32_t* p, std::uint32_t v) {
    asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
  }

  static constexpr std::uint32_t kSpinsBeforeSleep = 64;
  __device__ static void relax(std::uint32_t spins) {
    if (spins >= kSpinsBeforeSleep) __nanosleep(spins < 1024 ? 32 : 256);
  }

  __device__ static std::uint64_t now() {
    std::uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
};

}  // namespace hora::protocols

#endif  // __CUDACC__
