// reduceDevice against reduceHost: for every element type and reduction
// kind, the GPU must produce the very bits the CPU executor produces (both
// run the same functors; the kernels are built without FMA contraction), at
// sizes that exercise the 16-byte packs, the scalar tail and an unaligned
// buffer, in place and out of place. Inputs are finite values whose
// reductions do not overflow, so that bitwise comparison is meaningful.
#include "kernels/device/reduce_device.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hora/communicator.h"
#include "cuda_ok.h"
#include "kernels/dtypes.h"
#include "kernels/reduce_host.h"

namespace hora::kernels {
namespace {

// Small values in the element type, exactly representable in every type.
template <typename T>
T smallValue(std::mt19937& random) {
  const int value = static_cast<int>(random() % 15) - 7;
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(value);
  else
    return T(static_cast<float>(value) * 0.5f);
}

template <typename T>
std::vector<unsigned char> bytesOf(std::size_t count, std::mt19937& random) {
  std::vector<unsigned char> bytes(count * sizeof(T));
  for (std::size_t i = 0; i < count; ++i) {
    T value = smallValue<T>(random);
    std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
  }
  return bytes;
}

std::vector<unsigned char> randomInput(DataType type, std::size_t count, std::mt19937& random) {
  switch (type) {
    case DataType::Int8:
      return bytesOf<std::int8_t>(count, random);
    case DataType::Uint8:
      return bytesOf<std::uint8_t>(count, random);
    case DataType::Int32:
      return bytesOf<std::int32_t>(count, random);
    case DataType::Uint32:
      return bytesOf<std::uint32_t>(count, random);
    case DataType::Int64:
      return bytesOf<std::int64_t>(count, random);
    case DataType::Uint64:
      return bytesOf<std::uint64_t>(count, random);
    case DataType::Float16:
      return bytesOf<float16>(count, random);
    case DataType::Float32:
      return bytesOf<float>(count, random);
    case DataType::Float64:
      return bytesOf<double>(count, random);
    case DataType::Bfloat16:
      return bytesOf<bfloat16>(count, random);
    case DataType::Float8e4m3:
      return bytesOf<fp8_e4m3>(count, random);
    case DataType::Float8e5m2:
      return bytesOf<fp8_e5m2>(count, random);
  }
  return {};
}

// 0.5 in the element type's representation (PreMulSum's scalar).
std::uint64_t halfScalarBits(DataType type) {
  std::uint64_t bits = 0;
  auto put = [&](auto value) { std::memcpy(&bits, &value, sizeof(value)); };
  switch (type) {
    case DataType::Float16:
      put(float16(0.5f));
      break;
    case DataType::Float32:
      put(0.5f);
      break;
    case DataType::Float64:
      put(0.5);
      break;
    case DataType::Bfloat16:
      put(bfloat16(0.5f));
      break;
    case DataType::Float8e4m3:
      put(fp8_e4m3(0.5f));
      break;
    case DataType::Float8e5m2:
      put(fp8_e5m2(0.5f));
      break;
    default:
      put(std::int64_t{3});
      break;  // integers: times 3, wrapping
  }
  return bits;
}

struct Case {
  ReduceSpec spec;
  bool finalize;
  std::string name;
};

std::vector<Case> allCases() {
  std::vector<Case> cases;
  for (int t = 0; t < kNumDataTypes; ++t) {
    const auto type = static_cast<DataType>(t);
    const bool floating = isFloatingType(type);
    const std::string typeName = dataTypeName(type);
    cases.push_back({{type, ReduceKind::Sum, 0}, false, typeName + " sum"});
    cases.push_back({{type, ReduceKind::Prod, 0}, false, typeName + " prod"});
    cases.push_back({{type, ReduceKind::Max, 0}, false, typeName + " max"});
    cases.push_back({{type, ReduceKind::Min, 0}, false, typeName + " min"});
    cases.push_back(
        {{type, ReduceKind::PreMulSum, halfScalarBits(type)}, false, typeName + " premulsum"});
    if (!floating) {
      cases.push_back({{type, ReduceKind::SumPostDiv, 3}, true, typeName + " sum/3 final"});
      cases.push_back({{type, ReduceKind::SumPostDiv, 3}, false, typeName + " sum/3 partial"});
    }
  }
  return cases;
}

// Runs one reduction on the device with the buffers at `offset` elements
// into their allocations, and returns dst's bytes.
void runOnDevice(const Case& c, const std::vector<unsigned char>& local,
                 const std::vector<unsigned char>& remote, bool hasRemote, bool inPlace,
                 std::size_t offset, std::vector<unsigned char>* result) {
  const std::size_t size = dataTypeSize(c.spec.type);
  const std::size_t bytes = local.size();
  const std::size_t shift = offset * size;
  unsigned char *dLocal = nullptr, *dRemote = nullptr, *dDst = nullptr;
  CUDA_OK(cudaMalloc(&dLocal, bytes + shift + 1));
  CUDA_OK(cudaMalloc(&dRemote, bytes + shift + 1));
  CUDA_OK(cudaMalloc(&dDst, bytes + shift + 1));
  CUDA_OK(cudaMemcpy(dLocal + shift, local.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dRemote + shift, remote.data(), bytes, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dDst, 0xA5, bytes + shift + 1));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  unsigned char* target = inPlace ? dLocal + shift : dDst + shift;
  reduceDevice(c.spec, target, dLocal + shift, hasRemote ? dRemote + shift : nullptr, bytes / size,
               c.finalize, stream);
  CUDA_OK(cudaStreamSynchronize(stream));
  result->resize(bytes);
  CUDA_OK(cudaMemcpy(result->data(), target, bytes, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(dLocal));
  CUDA_OK(cudaFree(dRemote));
  CUDA_OK(cudaFree(dDst));
}

TEST(ReduceDevice, SameBitsAsTheHostForEveryTypeKindAndShape) {
  std::mt19937 random(2026);
  // Sizes in elements: empty, one, less than a pack, packs plus a tail, many
  // blocks of packs.
  const std::size_t counts[] = {0, 1, 7, 4099, (1u << 20) + 3};
  for (const Case& c : allCases()) {
    SCOPED_TRACE(c.name);
    for (std::size_t count : counts) {
      SCOPED_TRACE("count " + std::to_string(count));
      const auto local = randomInput(c.spec.type, count, random);
      const auto remote = randomInput(c.spec.type, count, random);
      for (bool hasRemote : {true, false}) {
        std::vector<unsigned char> expected(local.size());
        reduceHost(c.spec, expected.data(), local.data(), hasRemote ? remote.data() : nullptr,
                   count, c.finalize);
        for (bool inPlace : {false, true}) {
          for (std::size_t offset : {0, 1}) {  // 1: not 16-byte aligned
            std::vector<unsigned char> result;
            runOnDevice(c, local, remote, hasRemote, inPlace, offset, &result);
            if (::testing::Test::HasFatalFailure()) return;
            ASSERT_EQ(result, expected)
                << (hasRemote ? "combine" : "transform")
                << (inPlace ? ", in place" : ", out of place") << ", offset " << offset;
          }
        }
      }
    }
  }
}

TEST(ReduceDevice, RejectsBadArgumentsBeforeLaunching) {
  float* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, 64), cudaSuccess);
  const ReduceSpec sum{DataType::Float32, ReduceKind::Sum, 0};
  EXPECT_THROW(reduceDevice(sum, nullptr, buffer, buffer, 4, false, nullptr), Error);
  EXPECT_THROW(
      reduceDevice(sum, reinterpret_cast<char*>(buffer) + 1, buffer, nullptr, 4, false, nullptr),
      Error);
  EXPECT_THROW(reduceDevice(ReduceSpec{DataType::Int32, ReduceKind::SumPostDiv, 0}, buffer, buffer,
                            nullptr, 4, true, nullptr),
               Error);
  EXPECT_NO_THROW(reduceDevice(sum, nullptr, nullptr, nullptr, 0, false, nullptr));
  cudaFree(buffer);
}

}  // namespace
}  // namespace hora::kernels
