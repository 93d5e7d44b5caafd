// The ring schedules of algorithms/ring.h, played on 1 to 9 ranks: every
// message matches, nothing deadlocks, and every output element holds what
// the collective defines, once (collective_checks.h lists the checks).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "expect_cases.h"

namespace hora::schedule_test {
namespace {

constexpr Collective kRingCollectives[] = {Collective::AllReduce, Collective::ReduceScatter,
                                           Collective::AllGather, Collective::Broadcast,
                                           Collective::Reduce};

class RingSchedule : public ::testing::TestWithParam<std::tuple<Collective, int>> {
 protected:
  Collective collective() const { return std::get<0>(GetParam()); }
  int nranks() const { return std::get<1>(GetParam()); }
};

// Counts 0 to 65537, chunks 1 to 2^20, align 1 and 16, 1 to 4 channels,
// several ring orders and roots.
TEST_P(RingSchedule, DeliversTheCollective) { expectCasesHold(ringCases(collective(), nranks())); }

// Counts beyond 2^32 elements: offsets and sizes must not be cut to 32 bits.
TEST_P(RingSchedule, DeliversCountsBeyond32Bits) {
  expectCasesHold(hugeCases(collective(), nranks()));
}

INSTANTIATE_TEST_SUITE_P(
    AllCollectives, RingSchedule,
    ::testing::Combine(::testing::ValuesIn(kRingCollectives), ::testing::Range(1, 10)),
    [](const ::testing::TestParamInfo<RingSchedule::ParamType>& info) {
      return std::string(collectiveName(std::get<0>(info.param))) + "_" +
             std::to_string(std::get<1>(info.param)) + "ranks";
    });

// With C channels each channel carries its own part: on every rank the
// channels' outputs are disjoint, together the whole result, and none is
// empty when the buffer spans several loops.
TEST(RingChannelSplit, EveryChannelCarriesAPartAndTogetherAll) {
  for (Collective collective : kRingCollectives)
    for (int n : {1, 2, 5, 9})
      for (int channels = 1; channels <= 4; ++channels)
        for (std::size_t align : {std::size_t{1}, std::size_t{16}}) {
          std::vector<int> order(n);
          for (int r = 0; r < n; ++r) order[r] = (r + 1) % n;
          const Case c{collective, order, channels, 4099, 16, align, n - 1};
          SCOPED_TRACE(c.describe());
          const Outcome outcome = runCase(c);
          const std::vector<std::string> errors = checkCase(c, outcome);
          ASSERT_TRUE(errors.empty()) << errors.front();
          for (int rank = 0; rank < n; ++rank) {
            if (collective == Collective::Reduce && rank != c.root) continue;
            std::vector<std::size_t> perChannel(channels, 0);
            for (const Write& w : outcome.ranks[rank].writes) perChannel[w.channel] += w.size;
            std::size_t total = 0;
            for (int channel = 0; channel < channels; ++channel) {
              EXPECT_GT(perChannel[channel], 0u) << "rank " << rank << " channel " << channel;
              total += perChannel[channel];
            }
            const std::size_t blocks = collective == Collective::AllGather ? n : 1;
            EXPECT_EQ(total, blocks * c.count) << "rank " << rank;
          }
        }
}

}  // namespace
}  // namespace hora::schedule_test
