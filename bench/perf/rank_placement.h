// Where hora-perf puts each rank's buffers: in host memory, or on a GPU.
//
// With a GPU, buffers are device memory, as in nccl-tests. Rank i of a
// process uses device (localRank * ranksInProcess + i) modulo the device
// count, nccl-tests' order, except that hora lets ranks share a device (NCCL
// refuses). The environment overrides it:
//   HORA_PERF_MEMORY=host|device   host buffers even where a GPU exists, or
//                                  insist on device buffers
//   HORA_PERF_DEVICE=N             every rank of the process on device N
//                                  (several ranks on one GPU)
//   NCCL_TESTS_DEVICE=N            nccl-tests' meaning: rank i on N + i
#pragma once

#include <vector>

#include "launch_environment.h"

namespace hora::perf {

struct RankPlacement {
  // One device per rank of the process; empty: host buffers.
  std::vector<int> devices;
  bool onDevice() const { return !devices.empty(); }
};

// Throws UsageError when the variables ask for what the machine lacks (a
// device number past the count, device memory without a GPU) or are not
// numbers.
RankPlacement placeRanks(int ranksInProcess, int localRank, int deviceCount, const EnvironmentLookup& lookup);

}  // namespace hora::perf
