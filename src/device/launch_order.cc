#include "device/launch_order.h"

namespace hora::device {

LaunchWait launchWait(LaunchRule rule, std::uint64_t maxUnfinished, const LaunchCount& count, std::uint64_t ownDone,
                      std::span<const std::uint64_t> peersStarted) {
  const bool ownBehind = count.kernels > ownDone;
  switch (rule) {
    case LaunchRule::None:
      return {};
    case LaunchRule::Unfinished:
      if (count.kernels - ownDone >= maxUnfinished) return {LaunchWait::OwnLastKernel};
      return {};
    case LaunchRule::Started:
      if (!count.lastWasCollective) return ownBehind ? LaunchWait{LaunchWait::OwnLastKernel} : LaunchWait{};
      for (std::size_t i = 0; i < peersStarted.size(); ++i)
        if (peersStarted[i] < count.collectives) return {LaunchWait::PeerCollective, static_cast<int>(i)};
      return {};
  }
  return {};
}

LaunchRuleChoice launchRuleFromSetting(long long maxQueued, bool set) {
  if (!set) return {};
  if (maxQueued <= 0) return {LaunchRule::None, 0};
  return {LaunchRule::Unfinished, static_cast<std::uint64_t>(maxQueued)};
}

}  // namespace hora::device
