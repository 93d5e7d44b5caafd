// One rank's send and receive buffers, allocated and registered as -R asks:
// plain memory, or ncclMemAlloc memory registered with the communicator
// (ncclCommRegister, or the collective ncclCommWindowRegister). Plain memory
// is host memory, or device memory on the rank's GPU (rank_placement.h).
//
// The benchmark writes inputs and reads results through hostView(): the
// buffers themselves for host memory, mirrors in host memory for device
// memory, copied across by upload() and download().
#pragma once

#include <cstddef>
#include <optional>

#include "data_check.h"
#include "host_buffer.h"
#include "nccl.h"
#include "options.h"

namespace hora::perf {

class RankMemory {
 public:
  // Both buffers hold `bytes`, on `device` when there is one (made current
  // on the calling thread); on failure, reports it and ends the process.
  RankMemory(std::size_t bytes, Registration mode, int rank, std::optional<int> device);
  ~RankMemory();
  RankMemory(const RankMemory&) = delete;
  RankMemory& operator=(const RankMemory&) = delete;

  // The pointers the collectives are called with.
  RankBuffers buffers() const { return {send_, recv_}; }
  // Where the benchmark writes inputs and reads results.
  RankBuffers hostView() const;
  // The stream the collectives run on: the rank's own for device memory,
  // none for host memory.
  cudaStream_t stream() const { return stream_; }
  bool onDevice() const { return device_.has_value(); }

  // Device memory: copies the first `bytes` of the host view to the
  // buffers, or back (at most their size). Host memory: nothing.
  void upload(std::size_t bytes) const;
  void download(std::size_t bytes) const;
  // Returns when the collectives enqueued on stream() have run.
  void complete() const;

  // Registers both buffers with `comm` (nothing for Registration::None).
  // With windows this is collective: every rank of `comm` calls it at once.
  void registerWith(ncclComm_t comm);
  // Undoes registerWith; call before the communicator is destroyed.
  void deregister();

 private:
  Registration mode_;
  int rank_;
  std::optional<int> device_;
  std::size_t bytes_;
  // Host buffers for plain host memory; the mirrors for device memory.
  HostBuffer hostSend_;
  HostBuffer hostRecv_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  void* handles_[2] = {nullptr, nullptr};
  ncclWindow_t windows_[2] = {nullptr, nullptr};
};

}  // namespace hora::perf
