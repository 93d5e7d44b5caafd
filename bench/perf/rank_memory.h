// One rank's send and receive buffers, allocated and registered as -R asks:
// plain host memory, or ncclMemAlloc memory registered with the
// communicator (ncclCommRegister, or the collective ncclCommWindowRegister).
#pragma once

#include <cstddef>

#include "data_check.h"
#include "host_buffer.h"
#include "nccl.h"
#include "options.h"

namespace hora::perf {

class RankMemory {
 public:
  // Both buffers hold `bytes`; on failure, reports it and ends the process.
  RankMemory(std::size_t bytes, Registration mode, int rank);
  ~RankMemory();
  RankMemory(const RankMemory&) = delete;
  RankMemory& operator=(const RankMemory&) = delete;

  RankBuffers buffers() const { return {send_, recv_}; }
  // Registers both buffers with `comm` (nothing for Registration::None).
  // With windows this is collective: every rank of `comm` calls it at once.
  void registerWith(ncclComm_t comm);
  // Undoes registerWith; call before the communicator is destroyed.
  void deregister();

 private:
  Registration mode_;
  int rank_;
  std::size_t bytes_;
  HostBuffer plainSend_;
  HostBuffer plainRecv_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  ncclComm_t comm_ = nullptr;
  void* handles_[2] = {nullptr, nullptr};
  ncclWindow_t windows_[2] = {nullptr, nullptr};
};

}  // namespace hora::perf
