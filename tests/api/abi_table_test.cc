// Compares the ABI of hora's nccl.h with NVIDIA's (see abi_table.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "abi_table.h"

namespace hora_api_test {
namespace {

std::map<std::string, std::string> byName(const std::vector<AbiEntry>& table) {
  std::map<std::string, std::string> result;
  for (const auto& entry : table) {
    EXPECT_TRUE(result.emplace(entry.name, entry.value).second) << "recorded twice: " << entry.name;
  }
  return result;
}

TEST(AbiTable, EveryRecordedValueEqualsNvidias) {
  auto nvidia = byName(nvidiaAbiTable());
  auto hora = byName(horaAbiTable());
  // Both tables come from one list; a short table means the recording broke.
  ASSERT_GT(nvidia.size(), 150u);
  ASSERT_EQ(nvidia.size(), hora.size());
  for (const auto& [name, value] : nvidia) {
    auto found = hora.find(name);
    ASSERT_NE(found, hora.end()) << name << " is missing from hora's table";
    EXPECT_EQ(found->second, value) << name << ": hora's nccl.h differs from NVIDIA's";
  }
}

TEST(AbiTable, RecordsTheFactsThatMatterMost) {
  // Spot checks that the table holds real values, so the comparison above
  // cannot pass by comparing two empty or constant tables.
  auto hora = byName(horaAbiTable());
  EXPECT_EQ(hora["NCCL_UNIQUE_ID_BYTES"], "128");
  EXPECT_EQ(hora["ncclRemoteError"], "6");
  EXPECT_EQ(hora["ncclFloat8e5m2"], "11");
  EXPECT_EQ(hora["NCCL_CONFIG_INITIALIZER.magic"], std::to_string(0xcafebeefu));
  EXPECT_EQ(hora["NCCL_CONFIG_INITIALIZER.size"], hora["sizeof(ncclConfig_t)"]);
  EXPECT_EQ(hora["NCCL_CONFIG_INITIALIZER.netName"], "NULL");
  EXPECT_THAT(hora["signature(ncclAllReduce)"], ::testing::HasSubstr("ncclResult_t"));
  EXPECT_EQ(hora["signature(ncclAllReduce)"], hora["signature(pncclAllReduce)"]);
}

TEST(AbiTable, RecordsTheDeviceApiWhereNvidiasHeaderHasIt) {
  auto hora = byName(horaAbiTable());
  if (!hora.count("sizeof(ncclTeam_t)")) GTEST_SKIP() << "NVIDIA's nccl_device.h is not installed";
  EXPECT_EQ(hora["sizeof(ncclTeam_t)"], "12");  // three ints, returned by value
  EXPECT_THAT(hora["signature(ncclTeamWorld)"], ::testing::HasSubstr("ncclTeam"));
  EXPECT_THAT(hora["signature(ncclDevCommCreate)"], ::testing::HasSubstr("ncclDevCommRequirements"));
}

}  // namespace
}  // namespace hora_api_test
