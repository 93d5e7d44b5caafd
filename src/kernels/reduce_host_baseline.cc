// reduceHost's loops for the build's baseline instruction set (on x86-64,
// SSE2): what every CPU the binary runs on can execute.
#include "kernels/reduce_isa.h"
#include "kernels/reduce_loops.h"

namespace hora::kernels::detail {
namespace {

struct BaselineLoops {
  template <typename T, typename Combine, typename Pre, typename Post>
  static void combine(const loops::Buffers<T>& b, Pre pre, Post post) {
    loops::combineLoop<T, Combine>(b, pre, post);
  }
  template <typename T, typename Pre, typename Post>
  static void transform(const loops::Buffers<T>& b, Pre pre, Post post) {
    loops::transformLoop<T>(b, pre, post);
  }
};

}  // namespace

void reduceBaseline(const ReduceSpec& spec, void* dst, const void* local, const void* remote,
                    std::size_t count, bool finalize) {
  loops::reduceValidated<BaselineLoops>(spec, dst, local, remote, count, finalize);
}

}  // namespace hora::kernels::detail
