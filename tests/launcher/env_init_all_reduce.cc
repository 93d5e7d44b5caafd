// One rank of a job started by any launcher (mpirun, srun, torchrun,
// hora-run): joins with the C++ API's env:// init, which reads the
// launcher's variables, and checks one all-reduce exactly. Prints
// "rank R of N: all-reduce exact" and exits 0, or names what failed and
// exits 1.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "hora/communicator.h"

int main() {
  try {
    auto comm = hora::Communicator::fromInitMethod("env://");
    const int rank = comm->rank();
    const int size = comm->size();
    // Element i of rank r holds (i + 1) * 2^r, so every element's sum,
    // (i + 1) * (2^size - 1), shows whether each rank's part arrived once.
    constexpr std::size_t kCount = 4096;
    std::vector<std::int64_t> values(kCount);
    for (std::size_t i = 0; i < kCount; ++i) values[i] = static_cast<std::int64_t>(i + 1) << rank;
    comm->allReduce(values.data(), values.data(), kCount, hora::DataType::Int64, hora::RedOp::Sum);
    const std::int64_t ranksSum = (std::int64_t{1} << size) - 1;
    for (std::size_t i = 0; i < kCount; ++i) {
      const std::int64_t expected = static_cast<std::int64_t>(i + 1) * ranksSum;
      if (values[i] != expected) {
        std::fprintf(stderr, "rank %d of %d: element %zu is %lld, expected %lld\n", rank, size, i,
                     static_cast<long long>(values[i]), static_cast<long long>(expected));
        return 1;
      }
    }
    std::printf("rank %d of %d: all-reduce exact\n", rank, size);
    return 0;
  } catch (const hora::Error& error) {
    std::fprintf(stderr, "env_init_all_reduce: %s\n", error.what());
    return 1;
  }
}
