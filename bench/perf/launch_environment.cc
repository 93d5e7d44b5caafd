#include "launch_environment.h"

#include <charconv>
#include <climits>
#include <string_view>

#include "options.h"

namespace hora::perf {
namespace {

int parseVariable(const char* name, const char* text, int min, int max) {
  const std::string_view view(text);
  int value = 0;
  const auto [last, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (view.empty() || error != std::errc() || last != view.data() + view.size() || value < min ||
      value > max) {
    throw UsageError(std::string(name) + "='" + text + "' is not a whole number between " +
                     std::to_string(min) + " and " + std::to_string(max));
  }
  return value;
}

const char* required(const EnvironmentLookup& lookup, const char* name) {
  const char* value = lookup(name);
  if (value == nullptr || value[0] == '\0') {
    throw UsageError(
        std::string("RANK and WORLD_SIZE are set but ") + name +
        " is not; start hora-perf with hora-run, or unset RANK and WORLD_SIZE to run ranks as threads");
  }
  return value;
}

}  // namespace

std::optional<ProcessRank> processRankFromEnvironment(const EnvironmentLookup& lookup) {
  const char* rank = lookup("RANK");
  const char* worldSize = lookup("WORLD_SIZE");
  if (rank == nullptr && worldSize == nullptr) return std::nullopt;
  if (rank == nullptr || worldSize == nullptr) {
    throw UsageError(std::string(rank == nullptr ? "WORLD_SIZE" : "RANK") + " is set but " +
                     (rank == nullptr ? "RANK" : "WORLD_SIZE") +
                     " is not; set both (hora-run does) or neither");
  }
  ProcessRank process;
  process.worldSize = parseVariable("WORLD_SIZE", worldSize, 1, INT_MAX);
  process.rank = parseVariable("RANK", rank, 0, process.worldSize - 1);
  if (const char* local = lookup("LOCAL_RANK"))
    process.localRank = parseVariable("LOCAL_RANK", local, 0, INT_MAX);
  process.masterAddr = required(lookup, "MASTER_ADDR");
  process.masterPort = parseVariable("MASTER_PORT", required(lookup, "MASTER_PORT"), 1, 65535);
  return process;
}

std::string commIdAddress(const ProcessRank& process) {
  const bool ipv6 = process.masterAddr.find(':') != std::string::npos && process.masterAddr.front() != '[';
  const std::string host = ipv6 ? "[" + process.masterAddr + "]" : process.masterAddr;
  return host + ":" + std::to_string(process.masterPort);
}

}  // namespace hora::perf
