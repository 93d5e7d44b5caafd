#include "rank_placement.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "options.h"

namespace hora::perf {
namespace {

EnvironmentLookup environmentOf(const std::map<std::string, std::string>& variables) {
  return [variables](const char* name) -> const char* {
    const auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

TEST(RankPlacement, HostMemoryWithoutAGpu) {
  EXPECT_FALSE(placeRanks(4, 0, 0, environmentOf({})).onDevice());
}

TEST(RankPlacement, ConsecutiveDevicesFromTheProcessFirstAsNcclTests) {
  EXPECT_EQ(placeRanks(4, 0, 8, environmentOf({})).devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(placeRanks(2, 1, 8, environmentOf({})).devices, (std::vector<int>{2, 3}));
  EXPECT_EQ(placeRanks(1, 5, 8, environmentOf({})).devices, (std::vector<int>{5}));
}

TEST(RankPlacement, MoreRanksThanDevicesShareThem) {
  EXPECT_EQ(placeRanks(4, 0, 1, environmentOf({})).devices, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(placeRanks(3, 0, 2, environmentOf({})).devices, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(placeRanks(1, 3, 2, environmentOf({})).devices, (std::vector<int>{1}));
}

TEST(RankPlacement, OneDeviceForEveryRank) {
  EXPECT_EQ(placeRanks(3, 0, 4, environmentOf({{"HORA_PERF_DEVICE", "2"}})).devices,
            (std::vector<int>{2, 2, 2}));
}

TEST(RankPlacement, NcclTestsDeviceCountsFromTheGivenOne) {
  EXPECT_EQ(placeRanks(2, 0, 4, environmentOf({{"NCCL_TESTS_DEVICE", "1"}})).devices,
            (std::vector<int>{1, 2}));
  EXPECT_THROW(placeRanks(2, 0, 2, environmentOf({{"NCCL_TESTS_DEVICE", "1"}})), UsageError);
}

TEST(RankPlacement, HostMemoryOnRequestEvenWithAGpu) {
  EXPECT_FALSE(placeRanks(2, 0, 1, environmentOf({{"HORA_PERF_MEMORY", "host"}})).onDevice());
}

TEST(RankPlacement, BadVariablesAreUsageErrors) {
  EXPECT_THROW(placeRanks(1, 0, 0, environmentOf({{"HORA_PERF_MEMORY", "device"}})), UsageError);
  EXPECT_THROW(placeRanks(1, 0, 1, environmentOf({{"HORA_PERF_MEMORY", "gpu"}})), UsageError);
  EXPECT_THROW(placeRanks(1, 0, 1, environmentOf({{"HORA_PERF_DEVICE", "1"}})), UsageError);
  EXPECT_THROW(placeRanks(1, 0, 1, environmentOf({{"HORA_PERF_DEVICE", "x"}})), UsageError);
  EXPECT_THROW(placeRanks(1, 0, 1, environmentOf({{"HORA_PERF_DEVICE", "-1"}})), UsageError);
  EXPECT_THROW(placeRanks(1, 0, 4, environmentOf({{"HORA_PERF_DEVICE", "1x"}})), UsageError);
}

}  // namespace
}  // namespace hora::perf
