#include "launch_environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "options.h"

namespace hora::perf {
namespace {

using ::testing::HasSubstr;

EnvironmentLookup lookupIn(const std::map<std::string, std::string>& variables) {
  return [variables](const char* name) -> const char* {
    const auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

std::string usageErrorOf(const std::map<std::string, std::string>& variables) {
  try {
    processRankFromEnvironment(lookupIn(variables));
  } catch (const UsageError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

TEST(LaunchEnvironment, NoVariablesMeansThreads) {
  EXPECT_FALSE(processRankFromEnvironment(lookupIn({})).has_value());
  EXPECT_FALSE(processRankFromEnvironment(lookupIn({{"MASTER_ADDR", "h"}})).has_value());
}

TEST(LaunchEnvironment, ReadsWhatHoraRunSets) {
  const auto process = processRankFromEnvironment(lookupIn({{"RANK", "2"},
                                                            {"WORLD_SIZE", "4"},
                                                            {"LOCAL_RANK", "0"},
                                                            {"MASTER_ADDR", "10.1.2.3"},
                                                            {"MASTER_PORT", "29500"}}));
  ASSERT_TRUE(process.has_value());
  EXPECT_EQ(process->rank, 2);
  EXPECT_EQ(process->worldSize, 4);
  EXPECT_EQ(process->localRank, 0);
  EXPECT_EQ(commIdAddress(*process), "10.1.2.3:29500");
}

TEST(LaunchEnvironment, ReadsMpirunAndSrunVariablesLikeTheLibrary) {
  auto process = processRankFromEnvironment(lookupIn({{"OMPI_COMM_WORLD_RANK", "1"},
                                                      {"OMPI_COMM_WORLD_SIZE", "3"},
                                                      {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                      {"MASTER_ADDR", "127.0.0.1"},
                                                      {"MASTER_PORT", "4000"}}));
  ASSERT_TRUE(process.has_value());
  EXPECT_EQ(process->rank, 1);
  EXPECT_EQ(process->worldSize, 3);
  EXPECT_EQ(process->localRank, 1);
  EXPECT_EQ(commIdAddress(*process), "127.0.0.1:4000");

  // Under srun rank 0's host is the step's first node.
  process = processRankFromEnvironment(lookupIn({{"SLURM_PROCID", "3"},
                                                 {"SLURM_NTASKS", "4"},
                                                 {"SLURM_STEP_NODELIST", "node[07-08]"},
                                                 {"MASTER_PORT", "29500"}}));
  ASSERT_TRUE(process.has_value());
  EXPECT_EQ(process->rank, 3);
  EXPECT_EQ(commIdAddress(*process), "node07:29500");
}

TEST(LaunchEnvironment, ACommIdNeedsNoMasterAddress) {
  const auto process =
      processRankFromEnvironment(lookupIn({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"NCCL_COMM_ID", "h:1"}}));
  ASSERT_TRUE(process.has_value());
  EXPECT_EQ(process->masterPort, 0);  // NCCL_COMM_ID is left as the user set it
}

TEST(LaunchEnvironment, Ipv6AddressesAreBracketed) {
  ProcessRank process;
  process.masterAddr = "::1";
  process.masterPort = 1234;
  EXPECT_EQ(commIdAddress(process), "[::1]:1234");
  process.masterAddr = "[fe80::1]";
  EXPECT_EQ(commIdAddress(process), "[fe80::1]:1234");
}

TEST(LaunchEnvironment, IncompleteOrInvalidIsAUsageError) {
  EXPECT_THAT(usageErrorOf({{"RANK", "0"}}), HasSubstr("RANK is set but WORLD_SIZE is not"));
  EXPECT_THAT(usageErrorOf({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
              HasSubstr("-x MASTER_PORT="));
  EXPECT_THAT(usageErrorOf({{"WORLD_SIZE", "2"}}), HasSubstr("WORLD_SIZE is set but RANK is not"));
  EXPECT_THAT(usageErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}),
              HasSubstr("MASTER_ADDR"));
  EXPECT_THAT(usageErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}),
              HasSubstr("MASTER_PORT"));
  EXPECT_THAT(usageErrorOf({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}),
              HasSubstr("RANK='2'"));
  EXPECT_THAT(usageErrorOf({{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}),
              HasSubstr("RANK='x'"));
  EXPECT_THAT(
      usageErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}}),
      HasSubstr("MASTER_PORT='70000'"));
}

}  // namespace
}  // namespace hora::perf
