// Whether hora-perf runs as one rank of a job started by hora-run (or any
// launcher that sets torchrun's variables), and which rank.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace hora::perf {

struct ProcessRank {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  std::string masterAddr;
  int masterPort = 0;
};

using EnvironmentLookup = std::function<const char*(const char* name)>;

// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. Empty when
// neither RANK nor WORLD_SIZE is set (all ranks are threads of this
// process). Throws UsageError when they are set but incomplete or invalid.
std::optional<ProcessRank> processRankFromEnvironment(const EnvironmentLookup& lookup);

// The NCCL_COMM_ID value naming rank 0's address: "host:port", with an IPv6
// address in brackets ("[::1]:port").
std::string commIdAddress(const ProcessRank& process);

}  // namespace hora::perf
