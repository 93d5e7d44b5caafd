// Throughput of reduceHost, the arithmetic inside every host collective,
// next to memcpy over the same buffer sizes. Both report memory traffic per
// second (bytes_per_second): a reduction reads two buffers and writes one
// (3 x size), a copy reads one and writes one (2 x size). A reduction that
// keeps up with memory runs at about the copy's bytes_per_second; for
// buffers beyond the last-level cache both are bound by DRAM bandwidth.
//
//   hora-bench-reduce --benchmark_filter='Float32|Memcpy'
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/dtypes.h"
#include "kernels/reduce_host.h"

namespace {

using hora::DataType;
using hora::kernels::ReduceKind;
using hora::kernels::ReduceSpec;

constexpr std::int64_t kMinBytes = std::int64_t{64} << 10;
constexpr std::int64_t kMaxBytes = std::int64_t{64} << 20;

// Values that stay ordinary numbers after any number of sums (no overflow to
// infinity, no subnormals), so every iteration does the same work.
template <typename T>
std::vector<T> filledBuffer(std::size_t count, float value) {
  if constexpr (std::is_integral_v<T>) {
    return std::vector<T>(count, static_cast<T>(value));
  } else {
    return std::vector<T>(count, T(value));
  }
}

template <typename T, DataType kType>
void reduceSum(benchmark::State& state, bool inPlace) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  const std::size_t count = bytes / sizeof(T);
  std::vector<T> local = filledBuffer<T>(count, 0.0f);
  const std::vector<T> remote = filledBuffer<T>(count, 1.0f);
  std::vector<T> dst = filledBuffer<T>(count, 0.0f);
  T* out = inPlace ? local.data() : dst.data();
  const ReduceSpec spec{kType, ReduceKind::Sum, 0};
  for (auto _ : state) {
    hora::kernels::reduceHost(spec, out, local.data(), remote.data(), count, false);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(3 * bytes));
}

template <typename T, DataType kType>
void BM_ReduceSum(benchmark::State& state) {
  reduceSum<T, kType>(state, false);
}

// dst == local: how the ring reduces a received chunk into the user buffer.
void BM_ReduceSumInPlace_Float32(benchmark::State& state) {
  reduceSum<float, DataType::Float32>(state, true);
}

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<char> source(bytes, 1);
  std::vector<char> destination(bytes, 0);
  for (auto _ : state) {
    std::memcpy(destination.data(), source.data(), bytes);
    benchmark::DoNotOptimize(destination.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(2 * bytes));
}

void sizes(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgName("bytes")->RangeMultiplier(4)->Range(kMinBytes, kMaxBytes);
}

BENCHMARK(BM_Memcpy)->Apply(sizes);
BENCHMARK(BM_ReduceSum<float, DataType::Float32>)->Name("BM_ReduceSum_Float32")->Apply(sizes);
BENCHMARK(BM_ReduceSumInPlace_Float32)->Apply(sizes);
BENCHMARK(BM_ReduceSum<hora::bfloat16, DataType::Bfloat16>)
    ->Name("BM_ReduceSum_Bfloat16")
    ->Apply(sizes);
BENCHMARK(BM_ReduceSum<hora::float16, DataType::Float16>)
    ->Name("BM_ReduceSum_Float16")
    ->Apply(sizes);
BENCHMARK(BM_ReduceSum<std::int32_t, DataType::Int32>)->Name("BM_ReduceSum_Int32")->Apply(sizes);

}  // namespace

BENCHMARK_MAIN();
