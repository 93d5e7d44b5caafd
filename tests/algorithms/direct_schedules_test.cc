// The direct schedules of algorithms/direct.h, played on 1 to 9 ranks: the
// all-reduce's fan-in receives one message from each other rank and reduces
// every rank's contribution once, in the same order on every rank; all-to-all,
// gather and scatter deliver every block to its place.
#include <gtest/gtest.h>

#include <string>

#include "expect_cases.h"

namespace hora::schedule_test {
namespace {

class DirectSchedule : public ::testing::TestWithParam<int> {};

// Counts 0 to 65537 and beyond 2^32, align 1 and 16, 1 to 4 channels.
TEST_P(DirectSchedule, DeliversTheAllReduce) { expectCasesHold(directCases(GetParam())); }

// Every root for up to 5 ranks, a few above.
TEST_P(DirectSchedule, DeliversTheAllToAll) { expectCasesHold(directCases(GetParam(), Collective::AllToAll)); }
TEST_P(DirectSchedule, DeliversTheGather) { expectCasesHold(directCases(GetParam(), Collective::Gather)); }
TEST_P(DirectSchedule, DeliversTheScatter) { expectCasesHold(directCases(GetParam(), Collective::Scatter)); }

INSTANTIATE_TEST_SUITE_P(Ranks, DirectSchedule, ::testing::Range(1, 10),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

// Each channel reduces its own part: disjoint, together the whole buffer.
TEST(DirectChannelSplit, EveryChannelCarriesAPartAndTogetherAll) {
  for (int n : {1, 2, 9})
    for (int channels = 1; channels <= 4; ++channels) {
      std::vector<int> order(n);
      for (int r = 0; r < n; ++r) order[r] = r;
      const Case c{Collective::DirectAllReduce, order, channels, 4099, 0, 16, 0};
      SCOPED_TRACE(c.describe());
      const Outcome outcome = runCase(c);
      const std::vector<std::string> errors = checkCase(c, outcome);
      ASSERT_TRUE(errors.empty()) << errors.front();
      for (int rank = 0; rank < n; ++rank) {
        std::vector<std::size_t> perChannel(channels, 0);
        for (const Write& w : outcome.ranks[rank].writes) perChannel[w.channel] += w.size;
        std::size_t total = 0;
        for (int channel = 0; channel < channels; ++channel) {
          EXPECT_GT(perChannel[channel], 0u) << "rank " << rank << " channel " << channel;
          total += perChannel[channel];
        }
        EXPECT_EQ(total, c.count) << "rank " << rank;
      }
    }
}

}  // namespace
}  // namespace hora::schedule_test
