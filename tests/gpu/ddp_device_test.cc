// The DDP Reducer with parameters and gradient buckets in device memory:
// two ranks as threads on GPU 0, each with its own communicator (hora's C++
// API, whose calls on device buffers run on the communicator's stream and
// complete before they return). Construction broadcasts rank 0's values;
// a step averages the gradients; both are checked here, exactly (the
// inputs are small integers and halves).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "comm_world.h"
#include "cuda_ok.h"
#include "hora/ddp/reducer.h"

namespace hora::ddp {
namespace {

std::vector<float> fromDevice(const void* data, std::size_t count) {
  std::vector<float> values(count);
  EXPECT_EQ(cudaMemcpy(values.data(), data, count * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return values;
}

TEST(DdpDevice, BroadcastAndAveragedGradientsInDeviceMemory) {
  const std::size_t counts[] = {(1u << 20) + 3, 1000};  // two buckets with a 1 MiB first bucket
  testing::runWithCommunicators(2, std::chrono::seconds(60), [&](Communicator& communicator) {
    const int rank = communicator.rank();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    std::vector<Parameter> parameters;
    std::vector<float*> data;
    for (std::size_t p = 0; p < 2; ++p) {
      float* values = nullptr;
      CUDA_OK(cudaMalloc(&values, counts[p] * sizeof(float)));
      const std::vector<float> initial(counts[p], static_cast<float>(10 * rank + p));
      CUDA_OK(cudaMemcpy(values, initial.data(), counts[p] * sizeof(float), cudaMemcpyHostToDevice));
      UPLOADS_LANDED();  // the Reducer's stream does not wait for the legacy stream
      data.push_back(values);
      parameters.emplace_back("w" + std::to_string(p), values, counts[p], DataType::Float32, MemoryKind::Device);
    }
    {
      Reducer reducer(communicator, parameters);
      for (std::size_t p = 0; p < 2; ++p)
        EXPECT_EQ(fromDevice(data[p], counts[p]), std::vector<float>(counts[p], static_cast<float>(p)))
            << "rank " << rank << ": parameter " << p << " is not rank 0's";
      for (int step = 0; step < 2; ++step) {
        reducer.zeroGradients();
        for (std::size_t p = 2; p-- > 0;) {
          const GradientView gradient = reducer.gradient(p);
          ASSERT_EQ(gradient.memory, MemoryKind::Device);
          const std::vector<float> mine(counts[p], static_cast<float>(rank + 1 + step));
          CUDA_OK(cudaMemcpy(gradient.data, mine.data(), counts[p] * sizeof(float), cudaMemcpyHostToDevice));
          UPLOADS_LANDED();
          reducer.markReady(p);
        }
        reducer.finish();
        // The mean of rank + 1 + step over ranks 0 and 1.
        const float want = 1.5f + static_cast<float>(step);
        for (std::size_t p = 0; p < 2; ++p)
          EXPECT_EQ(fromDevice(reducer.gradient(p).data, counts[p]), std::vector<float>(counts[p], want))
              << "rank " << rank << ", step " << step << ", parameter " << p;
      }
    }
    for (float* values : data) cudaFree(values);
  });
}

}  // namespace
}  // namespace hora::ddp
