#include "rank_placement.h"

#include <charconv>
#include <string>
#include <string_view>

#include "options.h"

namespace hora::perf {
namespace {

// A device number named by `variable`; throws unless it is one of the
// machine's devices.
int deviceNamed(const char* variable, std::string_view text, int deviceCount) {
  int device = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), device);
  if (error != std::errc() || end != text.data() + text.size() || device < 0) {
    throw UsageError(std::string(variable) + "=" + std::string(text) + " is not a device number");
  }
  if (device >= deviceCount) {
    throw UsageError(std::string(variable) + "=" + std::string(text) + ": this machine has " +
                     std::to_string(deviceCount) + " CUDA device(s)");
  }
  return device;
}

}  // namespace

RankPlacement placeRanks(int ranksInProcess, int localRank, int deviceCount, const EnvironmentLookup& lookup) {
  const char* memory = lookup("HORA_PERF_MEMORY");
  const std::string_view kind = memory != nullptr ? memory : "";
  if (!kind.empty() && kind != "host" && kind != "device") {
    throw UsageError("HORA_PERF_MEMORY=" + std::string(kind) + " (valid: host, device)");
  }
  if (kind == "host" || (kind.empty() && deviceCount == 0)) return {};
  if (deviceCount == 0) throw UsageError("HORA_PERF_MEMORY=device, but no CUDA device is usable here");

  RankPlacement placement;
  if (const char* all = lookup("HORA_PERF_DEVICE"); all != nullptr) {
    placement.devices.assign(static_cast<std::size_t>(ranksInProcess),
                             deviceNamed("HORA_PERF_DEVICE", all, deviceCount));
  } else if (const char* first = lookup("NCCL_TESTS_DEVICE"); first != nullptr) {
    const int base = deviceNamed("NCCL_TESTS_DEVICE", first, deviceCount);
    for (int i = 0; i < ranksInProcess; ++i) {
      const std::string device = std::to_string(base + i);
      placement.devices.push_back(deviceNamed("NCCL_TESTS_DEVICE (+ rank)", device, deviceCount));
    }
  } else {
    for (int i = 0; i < ranksInProcess; ++i) placement.devices.push_back((localRank * ranksInProcess + i) % deviceCount);
  }
  return placement;
}

}  // namespace hora::perf
