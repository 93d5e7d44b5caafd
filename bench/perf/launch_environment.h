// Whether hora-perf runs as one rank of a job started by a launcher
// (hora-run, torchrun, mpirun, mpiexec, srun), and which rank. The variables
// are read by the library's own rules (src/base/launcher_env.h), so hora-perf
// accepts exactly what the C++ API's env:// init accepts.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace hora::perf {

struct ProcessRank {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;  // 0 where the launcher does not say
  // Rank 0's address. masterPort 0: HORA_COMM_ID or NCCL_COMM_ID is set
  // and names it already.
  std::string masterAddr;
  int masterPort = 0;
};

using EnvironmentLookup = std::function<const char*(const char* name)>;

// Empty when no launcher set a rank or world size (all ranks are threads of
// this process). Throws UsageError when the variables are incomplete,
// invalid, or leave rank 0's address unknown.
std::optional<ProcessRank> processRankFromEnvironment(const EnvironmentLookup& lookup);

// The NCCL_COMM_ID value naming rank 0's address: "host:port", with an IPv6
// address in brackets ("[::1]:port").
std::string commIdAddress(const ProcessRank& process);

}  // namespace hora::perf
