// Throughput of reduceHostMany, the arithmetic of the zero-copy all-reduce:
// float32 sums of 2 inputs into 2 outputs, as two ranks on one host each
// reduce their half. bytes_per_second counts the memory traffic,
// (inputs + outputs) x buffer size per call, summed over the threads; the
// /threads:2 runs put one call on each of two cores at once, each on its own
// buffers, which is how the collective runs.
//
// Next to it, for scale:
//   ChainThenCopy   what the collective would do without reduceHostMany:
//                   reduceHost into the first output, then a copy of that
//                   output into the second (streaming when the run is).
//   Fused           a loop written for this one case with AVX2 intrinsics,
//                   loads and streaming stores side by side: roughly the
//                   best any block size can do.
//   CopyStreaming   one streaming copy (1 input, 1 output): the memory's
//                   own rate for this access pattern.
//
//   hora-bench-reduce-many --benchmark_filter='bytes:33554432'
//   hora-bench-reduce-many --benchmark_filter='Block'    (the block sizes)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "kernels/copy_host.h"
#include "kernels/reduce_host.h"
#include "kernels/reduce_isa.h"
#include "kernels/reduce_many.h"

#if HORA_KERNELS_HAVE_AVX2_LOOPS
#include <immintrin.h>
#endif

namespace {

using hora::DataType;
using hora::kernels::ReduceKind;
using hora::kernels::ReduceSpec;

constexpr std::int64_t kMinBytes = std::int64_t{64} << 10;
constexpr std::int64_t kMaxBytes = std::int64_t{64} << 20;
constexpr std::int64_t kTypicalBytes = std::int64_t{32} << 20;
constexpr std::int64_t kCachedBytes = std::int64_t{256} << 10;
constexpr int kInputs = 2;
constexpr int kOutputs = 2;

const ReduceSpec kSumFloat32{DataType::Float32, ReduceKind::Sum, 0};

// One thread's buffers, 64-byte aligned (as shared memory mappings are):
// allocated and touched by that thread, before timing.
struct Buffers {
  explicit Buffers(std::size_t count) : count(count) {
    for (int b = 0; b < kInputs + kOutputs; ++b) {
      storage.emplace_back(new (std::align_val_t{64}) float[count]);
      std::fill_n(storage.back().get(), count, 1.0f);
    }
    for (int k = 0; k < kInputs; ++k) inputs.push_back(storage[k].get());
    for (int j = 0; j < kOutputs; ++j) outputs.push_back(storage[kInputs + j].get());
  }
  struct AlignedDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::vector<std::unique_ptr<float[], AlignedDelete>> storage;
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  std::size_t count;
};

void finish(benchmark::State& state, int buffersTouched) {
  state.SetBytesProcessed(state.iterations() * buffersTouched * state.range(0));
}

// Arguments: bytes per buffer, streaming (0/1), block bytes.
void BM_ReduceMany(benchmark::State& state) {
  Buffers b(static_cast<std::size_t>(state.range(0)) / sizeof(float));
  const bool streaming = state.range(1) != 0;
  const hora::kernels::ReduceManyTuning tuning{hora::kernels::bestHostIsa(),
                                               static_cast<std::size_t>(state.range(2))};
  for (auto _ : state) {
    hora::kernels::reduceHostManyTuned(tuning, kSumFloat32, b.outputs.data(), kOutputs,
                                       b.inputs.data(), kInputs, b.count, streaming);
    if (streaming) hora::kernels::streamingFence();
    benchmark::ClobberMemory();
  }
  finish(state, kInputs + kOutputs);
}

void BM_ChainThenCopy(benchmark::State& state) {
  Buffers b(static_cast<std::size_t>(state.range(0)) / sizeof(float));
  const bool streaming = state.range(1) != 0;
  const std::size_t bytes = b.count * sizeof(float);
  for (auto _ : state) {
    hora::kernels::reduceHost(kSumFloat32, b.outputs[0], b.inputs[1], b.inputs[0], b.count, true);
    if (streaming) {
      hora::kernels::copyStreaming(b.outputs[1], b.outputs[0], bytes);
      hora::kernels::streamingFence();
    } else {
      std::memcpy(b.outputs[1], b.outputs[0], bytes);
    }
    benchmark::ClobberMemory();
  }
  finish(state, kInputs + kOutputs);
}

void BM_CopyStreaming(benchmark::State& state) {
  Buffers b(static_cast<std::size_t>(state.range(0)) / sizeof(float));
  for (auto _ : state) {
    hora::kernels::copyStreaming(b.outputs[0], b.inputs[0], b.count * sizeof(float));
    hora::kernels::streamingFence();
    benchmark::ClobberMemory();
  }
  finish(state, 2);
}

#if HORA_KERNELS_HAVE_AVX2_LOOPS
// Needs 32-byte aligned outputs (Buffers has them).
[[gnu::target("avx2")]] void fusedSumStream(float* out0, float* out1, const float* a,
                                            const float* b, std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 x = _mm256_add_ps(_mm256_loadu_ps(b + i), _mm256_loadu_ps(a + i));
    _mm256_stream_ps(out0 + i, x);
    _mm256_stream_ps(out1 + i, x);
  }
  for (; i < count; ++i) out0[i] = out1[i] = b[i] + a[i];
}

void BM_Fused(benchmark::State& state) {
  Buffers b(static_cast<std::size_t>(state.range(0)) / sizeof(float));
  auto* out0 = static_cast<float*>(b.outputs[0]);
  auto* out1 = static_cast<float*>(b.outputs[1]);
  const auto* in0 = static_cast<const float*>(b.inputs[0]);
  const auto* in1 = static_cast<const float*>(b.inputs[1]);
  if (!hora::kernels::hostIsaAvailable(hora::kernels::HostIsa::Avx2) ||
      reinterpret_cast<std::uintptr_t>(out0) % 32 != 0 ||
      reinterpret_cast<std::uintptr_t>(out1) % 32 != 0) {
    state.SkipWithError("needs AVX2 and 32-byte aligned outputs");
    return;
  }
  for (auto _ : state) {
    fusedSumStream(out0, out1, in0, in1, b.count);
    hora::kernels::streamingFence();
    benchmark::ClobberMemory();
  }
  finish(state, kInputs + kOutputs);
}
#endif

// 64 KiB (cache-resident) to 64 MiB (far beyond), and the typical 32 MiB.
std::vector<std::int64_t> bufferSizes() {
  std::vector<std::int64_t> sizes;
  for (std::int64_t bytes = kMinBytes; bytes <= kMaxBytes; bytes *= 4) sizes.push_back(bytes);
  sizes.insert(sizes.end() - 1, kTypicalBytes);
  return sizes;
}

// Sizes x streaming; ReduceMany also takes the block size (the default for
// the kind of stores).
void sizesAndStreaming(benchmark::internal::Benchmark* benchmark, bool withBlock) {
  if (withBlock) {
    benchmark->ArgNames({"bytes", "streaming", "block"});
  } else {
    benchmark->ArgNames({"bytes", "streaming"});
  }
  for (std::int64_t bytes : bufferSizes()) {
    for (std::int64_t streaming : {0, 1}) {
      if (withBlock) {
        const std::size_t block = streaming != 0 ? hora::kernels::kReduceManyStreamingBlockBytes
                                                 : hora::kernels::kReduceManyCachedBlockBytes;
        benchmark->Args({bytes, streaming, static_cast<std::int64_t>(block)});
      } else {
        benchmark->Args({bytes, streaming});
      }
    }
  }
  benchmark->Threads(1)->Threads(2)->UseRealTime();
}

// Every block size, for choosing the defaults (reduce_many.h): the typical call
// (streaming into memory), and ordinary stores into buffers that stay in
// the cache (256 KiB).
void blockSizes(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgNames({"bytes", "streaming", "block"});
  for (std::int64_t block = 64; block <= 16384; block *= 2) {
    benchmark->Args({kTypicalBytes, 1, block});
    benchmark->Args({kCachedBytes, 0, block});
  }
  benchmark->Threads(2)->UseRealTime();
}

// Streaming-only references.
void sizes(benchmark::internal::Benchmark* benchmark) {
  benchmark->ArgNames({"bytes", "streaming"});
  for (std::int64_t bytes : bufferSizes()) benchmark->Args({bytes, 1});
  benchmark->Threads(1)->Threads(2)->UseRealTime();
}

BENCHMARK(BM_ReduceMany)->Apply([](auto* b) { sizesAndStreaming(b, true); });
BENCHMARK(BM_ReduceMany)->Name("BM_ReduceManyBlock")->Apply(blockSizes);
BENCHMARK(BM_ChainThenCopy)->Apply([](auto* b) { sizesAndStreaming(b, false); });
#if HORA_KERNELS_HAVE_AVX2_LOOPS
BENCHMARK(BM_Fused)->Apply(sizes);
#endif
BENCHMARK(BM_CopyStreaming)->Apply(sizes);

}  // namespace

BENCHMARK_MAIN();
