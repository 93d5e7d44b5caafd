// What the gpu suite's tests of ranks as threads on one GPU share: NCCL_OK,
// and Ranks, n communicators on device 0 (ncclCommInitAll with the device
// repeated), each rank with a non-blocking stream of its own.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "nccl.h"

#define NCCL_OK(call)                                                                      \
  do {                                                                                     \
    ncclResult_t result_ = (call);                                                         \
    ASSERT_EQ(result_, ncclSuccess) << #call << ": " << ncclGetErrorString(result_) << ": " \
                                    << ncclGetLastError(nullptr);                          \
  } while (0)

class Ranks {
 public:
  explicit Ranks(int n) : comms_(static_cast<std::size_t>(n)), streams_(static_cast<std::size_t>(n)) {
    std::vector<int> devices(static_cast<std::size_t>(n), 0);
    EXPECT_EQ(ncclCommInitAll(comms_.data(), n, devices.data()), ncclSuccess) << ncclGetLastError(nullptr);
    for (auto& stream : streams_) EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  }
  ~Ranks() {
    for (auto stream : streams_) cudaStreamDestroy(stream);
    for (auto comm : comms_)
      if (comm != nullptr) ncclCommDestroy(comm);
  }
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;

  int size() const { return static_cast<int>(comms_.size()); }
  ncclComm_t comm(int r) const { return comms_[static_cast<std::size_t>(r)]; }
  cudaStream_t stream(int r) const { return streams_[static_cast<std::size_t>(r)]; }
  // The test aborted or destroyed rank r's communicator itself.
  void release(int r) { comms_[static_cast<std::size_t>(r)] = nullptr; }
  // Aborts every communicator still held (after a failure, whose kernels
  // a destroy would wait for) and releases it.
  void abortAll() {
    for (int r = 0; r < size(); ++r) {
      if (comm(r) != nullptr) ncclCommAbort(comm(r));
      release(r);
    }
  }

 private:
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
};
