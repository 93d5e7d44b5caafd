#include "launch_environment.h"

#include "base/launcher_env.h"
#include "options.h"

namespace hora::perf {

std::optional<ProcessRank> processRankFromEnvironment(const EnvironmentLookup& lookup) {
  try {
    const std::optional<launcher::Placement> placement = launcher::findPlacement(lookup);
    if (!placement) return std::nullopt;
    ProcessRank process;
    process.rank = placement->rank;
    process.worldSize = placement->worldSize;
    process.localRank = placement->localRank.value_or(0);
    if (auto master = launcher::masterAddress(&*placement, lookup)) {
      process.masterAddr = master->host;
      process.masterPort = master->port;
    }
    return process;
  } catch (const UsageError&) {
    throw;
  } catch (const Error& error) {
    // The launcher's variables are part of hora-perf's command line: a bad
    // one is a usage error (exit status 2), like a bad flag.
    throw UsageError(error.what());
  }
}

std::string commIdAddress(const ProcessRank& process) {
  const bool ipv6 = process.masterAddr.find(':') != std::string::npos && process.masterAddr.front() != '[';
  const std::string host = ipv6 ? "[" + process.masterAddr + "]" : process.masterAddr;
  return host + ":" + std::to_string(process.masterPort);
}

}  // namespace hora::perf
