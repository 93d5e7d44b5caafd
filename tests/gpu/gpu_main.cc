// The main() of the GPU test programs: runs the tests only where CUDA sees a
// device; elsewhere it says why and exits 77, Meson's "skipped".
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  // Ranks as threads on one GPU, each on its own stream: as many hardware
  // queues as CUDA allows, read when CUDA starts (docs/gpu.md, "Ranks of
  // one process on one GPU").
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf(
        "SKIP: no CUDA device here (%s); the GPU tests need one\n",
        status != cudaSuccess ? cudaGetErrorString(status) : "the driver reports 0 devices");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
