#include "device/launch_order.h"

namespace hora::device {

LaunchWait launchWait(LaunchRule rule, std::uint64_t maxUnfinished, const LaunchCount& count, std::uint64_t ownDone,
                      std::span<const std::uint64_t> peersStarted) {
  switch (rule) {
    case LaunchRule::None:
      return {};
    case LaunchRule::Unfinished:
      if (count.kernels - ownDone >= maxUnfinished) return {LaunchWait::OwnLastKernel};
      return {};
    case LaunchRule::Started:
      if (!count.lastWasCollective)
        return count.kernels > ownDone ? LaunchWait{LaunchWait::OwnLastKernel} : LaunchWait{};
      for (std::size_t i = 0; i < peersStarted.size(); ++i)
        if (peersStarted[i] < count.collectives) return {LaunchWait::PeerCollective, static_cast<int>(i)};
      return {};
  }
  return {};
}

LaunchRuleChoice launchRuleFromSetting(long long maxQueued) {
  if (maxQueued < 0) return {};
  if (maxQueued == 0) return {LaunchRule::None, 0};
  return {LaunchRule::Unfinished, static_cast<std::uint64_t>(maxQueued)};
}

LaunchRuleChoice groupLaunchRule(std::span<const long long> settings, bool everyWord) {
  const LaunchRuleChoice safe{LaunchRule::Unfinished, 1};
  if (settings.empty()) return safe;
  for (const long long setting : settings)
    if (setting != settings.front()) return safe;
  const LaunchRuleChoice chosen = launchRuleFromSetting(settings.front());
  return chosen.rule == LaunchRule::Started && !everyWord ? safe : chosen;
}

std::size_t nextLaunchOf(std::span<const std::uint64_t> nextCollective) {
  std::size_t chosen = nextCollective.size();
  for (std::size_t i = 0; i < nextCollective.size(); ++i)
    if (nextCollective[i] != kNoRingLaunch && (chosen == nextCollective.size() || nextCollective[i] < nextCollective[chosen]))
      chosen = i;
  return chosen;
}

}  // namespace hora::device
