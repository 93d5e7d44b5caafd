// How close the device reduce kernel (reduceDevice, a reduce-copy: two
// inputs read, one output written) comes to the GPU's memory bandwidth.
//
// The limit is measured in the same run: a device-to-device cudaMemcpy of
// the same size, counted as bytes read plus bytes written. The kernel's
// bandwidth is counted the same way (2 reads + 1 write per element), so
// "fraction" is kernel / copy. Sizes 64 MiB to 1 GiB per buffer, float and
// bfloat16 sum; the best of `iterations` timed with CUDA events.
//
//   hora-bench-reduce-device [iterations (default 20)]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "kernels/device/reduce_device.h"

namespace {

bool check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(status));
  return false;
}

// Best time of `iterations` runs of `work` on `stream`, in seconds.
double bestSeconds(int iterations, cudaStream_t stream, const std::function<void()>& work) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  work();  // warm-up
  float best = 1e30f;
  for (int i = 0; i < iterations; ++i) {
    cudaEventRecord(start, stream);
    work();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    best = std::min(best, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 20;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device here: nothing to measure\n");
    return 0;
  }
  cudaDeviceProp properties{};
  cudaGetDeviceProperties(&properties, 0);
  std::printf("# %s; best of %d; GB/s = (bytes read + bytes written) / time\n", properties.name,
              iterations);
  std::printf("# %12s %9s %12s %12s %9s\n", "bytes", "type", "copy GB/s", "reduce GB/s",
              "fraction");
  cudaStream_t stream;
  if (!check(cudaStreamCreate(&stream), "cudaStreamCreate")) return 1;
  for (std::size_t bytes = std::size_t{64} << 20; bytes <= std::size_t{1} << 30; bytes *= 4) {
    void *a = nullptr, *b = nullptr, *out = nullptr;
    if (!check(cudaMalloc(&a, bytes), "cudaMalloc") || !check(cudaMalloc(&b, bytes), "cudaMalloc") ||
        !check(cudaMalloc(&out, bytes), "cudaMalloc"))
      return 1;
    cudaMemset(a, 0, bytes);
    cudaMemset(b, 0, bytes);
    const double copy = bestSeconds(iterations, stream, [&] {
      cudaMemcpyAsync(out, a, bytes, cudaMemcpyDeviceToDevice, stream);
    });
    const double copyRate = 2.0 * bytes / copy / 1e9;
    for (auto type : {hora::DataType::Float32, hora::DataType::Bfloat16}) {
      const hora::kernels::ReduceSpec sum{type, hora::kernels::ReduceKind::Sum, 0};
      const std::size_t count = bytes / hora::dataTypeSize(type);
      const double reduce = bestSeconds(iterations, stream, [&] {
        hora::kernels::reduceDevice(sum, out, a, b, count, false, stream);
      });
      const double reduceRate = 3.0 * bytes / reduce / 1e9;
      std::printf("  %12zu %9s %12.1f %12.1f %9.3f\n", bytes, hora::dataTypeName(type), copyRate,
                  reduceRate, reduceRate / copyRate);
    }
    cudaFree(a);
    cudaFree(b);
    cudaFree(out);
  }
  cudaStreamDestroy(stream);
  return 0;
}
