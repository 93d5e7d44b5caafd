// reduceHost's and reduceHostMany's loops for the build's baseline
// instruction set (on x86-64, SSE2): what every CPU the binary runs on can
// execute. Streaming stores are copyStreaming's (16 bytes each on x86-64).
#include <cstring>

#include "kernels/copy_host.h"
#include "kernels/reduce_isa.h"
#include "kernels/reduce_loops.h"

namespace hora::kernels::detail {
namespace {

// noinline (combine, transform): reduceHost and reduceHostMany's blocks share
// one copy of each loop (see reduce_host_avx2.cc).
struct BaselineLoops {
  template <typename T, typename Combine, typename Pre, typename Post>
  [[gnu::noinline]] static void combine(const loops::Buffers<T>& b, Pre pre, Post post) {
    loops::combineLoop<T, Combine>(b, pre, post);
  }
  template <typename T, typename Pre, typename Post>
  [[gnu::noinline]] static void transform(const loops::Buffers<T>& b, Pre pre, Post post) {
    loops::transformLoop<T>(b, pre, post);
  }
  template <typename T, typename Combine, typename Pre, typename Post>
  static void many(const ManyBuffers& m, Pre pre, Post post) {
    loops::manyBlocks<BaselineLoops, T, Combine>(m, pre, post);
  }
  static void stream(void* dst, const void* src, std::size_t bytes) {
    copyStreaming(dst, src, bytes);
  }
  static void copy(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
};

}  // namespace

void reduceBaseline(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                    std::size_t count, bool finalize) {
  loops::reduceValidated<BaselineLoops>(spec, dst, local, remote, count, finalize);
}

void reduceManyBaseline(const ReduceSpec& spec, const ManyBuffers& buffers) {
  loops::reduceManyValidated<BaselineLoops>(spec, buffers);
}

}  // namespace hora::kernels::detail
