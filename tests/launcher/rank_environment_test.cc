#include "rank_environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hora::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(RankEnvironmentTest, NumbersRanksAcrossNodesAsTorchrun) {
  LaunchOptions options;
  options.nnodes = 2;
  options.node_rank = 1;
  options.nproc_per_node = 4;
  options.master_addr = "10.0.0.1";
  EXPECT_THAT(rank_variables(options, 3, 4242),
              ElementsAre(Pair("RANK", "7"), Pair("LOCAL_RANK", "3"), Pair("WORLD_SIZE", "8"),
                          Pair("LOCAL_WORLD_SIZE", "4"), Pair("GROUP_RANK", "1"), Pair("GROUP_WORLD_SIZE", "2"),
                          Pair("MASTER_ADDR", "10.0.0.1"), Pair("MASTER_PORT", "4242"),
                          Pair("ROLE_NAME", "default"), Pair("ROLE_RANK", "7"), Pair("ROLE_WORLD_SIZE", "8"),
                          Pair("TORCHELASTIC_RESTART_COUNT", "0"), Pair("TORCHELASTIC_MAX_RESTARTS", "0"),
                          Pair("TORCHELASTIC_RUN_ID", "none"), Pair("TORCHELASTIC_USE_AGENT_STORE", "False")));
}

TEST(RankEnvironmentTest, PyTorchsAsyncErrorHandlingOnUnlessTheUserChose) {
  EXPECT_THAT(torch_defaults(nullptr), ElementsAre(Pair("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")));
  EXPECT_THAT(torch_defaults("0"), ElementsAre());
}

TEST(RankEnvironmentTest, OneOpenMpThreadPerRankUnlessTheUserChose) {
  LaunchOptions options;
  options.nproc_per_node = 2;
  EXPECT_THAT(thread_defaults(options, nullptr), ElementsAre(Pair("OMP_NUM_THREADS", "1")));
  EXPECT_THAT(thread_defaults(options, "4"), ElementsAre());
  options.nproc_per_node = 1;
  EXPECT_THAT(thread_defaults(options, nullptr), ElementsAre());
}

TEST(RankEnvironmentTest, OverridesReplaceInheritedEntriesByExactName) {
  const char* inherited[] = {"PATH=/usr/bin", "RANK=99", "RANKING=keep", "EMPTY=", nullptr};
  EXPECT_THAT(merged_environment(inherited, {{"RANK", "1"}, {"WORLD_SIZE", "2"}}),
              ElementsAre("PATH=/usr/bin", "RANKING=keep", "EMPTY=", "RANK=1", "WORLD_SIZE=2"));
}

TEST(RankEnvironmentTest, EmptyInheritedEnvironment) {
  EXPECT_THAT(merged_environment(nullptr, {{"RANK", "0"}}), ElementsAre("RANK=0"));
}

}  // namespace
}  // namespace hora::launcher
