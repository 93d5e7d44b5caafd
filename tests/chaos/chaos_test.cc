// The fault campaign in the test suite: seeded random trials of every fault
// category (trial_plan.h), each bounded in time. Asserts: no hang, no call
// that returns success with wrong data, no crash, no job failed by
// strangers, a mismatch reported on every rank, and the rank that failed
// first named by at least 99% of the survivors of kills, stops and aborts.
// HORA_CHAOS_SEED and HORA_CHAOS_TRIALS replay or widen it; every problem
// is printed with its trial's seed and index.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "campaign_table.h"
#include "element_values.h"
#include "trial_runner.h"

namespace hora::chaos {
namespace {

long long environmentNumber(const char* name, long long fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::atoll(text) : fallback;
}

TEST(Chaos, SeededFaultsNeverHangCrashOrReturnWrongDataAndNameTheFirstFailure) {
  const auto seed = static_cast<std::uint64_t>(environmentNumber("HORA_CHAOS_SEED", 20261123));
  const int trials = static_cast<int>(environmentNumber("HORA_CHAOS_TRIALS", 40));
  CampaignTable table;
  for (int index = 0; index < trials; ++index) {
    const TrialResult result = runTrial(planTrial(seed, index));
    table.add(result);
    for (const std::string& problem : result.problems)
      ADD_FAILURE() << result.plan.describe() << ": " << problem;
  }
  table.print(std::cout);
  const CategoryTotals all = table.overall();
  EXPECT_EQ(all.hangs, 0);
  EXPECT_EQ(all.wrong, 0);
  EXPECT_EQ(all.crashes, 0);
  EXPECT_EQ(all.unreported, 0);
  // The naming target is a fraction: at least 99% of survivor errors.
  EXPECT_LE(all.misnamed * 100, all.survivorsNaming) << all.misnamed << " of " << all.survivorsNaming;
}

// Trials of longer campaigns that once failed, replayed from their seeds
// (bench/chaos/campaign.sh). Both: a rank whose first call differs in kind
// from the others' over ofi waited for a peer to open a link the peer's
// call never uses, without moving the data (and stamp) that peer waited
// for, so every rank timed out instead of reporting the mismatch.
TEST(Chaos, TrialsThatOnceFailedStayFixed) {
  struct Found {
    std::uint64_t seed;
    int index;
  };
  for (const Found found : {Found{20261126, 597}, Found{20261126, 658}}) {
    const TrialPlan plan = planTrial(found.seed, found.index);
    if (plan.describe().find("over ofi") == std::string::npos) {
      std::cout << plan.describe() << ": not the ofi trial it was (this build draws without ofi)\n";
      continue;
    }
    const TrialResult result = runTrial(plan);
    for (const std::string& problem : result.problems) ADD_FAILURE() << plan.describe() << ": " << problem;
  }
}

// The judge's own pieces, so that a wrong verdict cannot pass unnoticed.
TEST(ChaosJudge, ReadsTheRankAnErrorNamesFirst) {
  EXPECT_EQ(rankNamedFirst("rank 0: rank 3 (host vm, pid 12) failed first: closed"), 3);
  EXPECT_EQ(rankNamedFirst("rank 1: the communicator was stopped by rank 0, which found: rank 2 failed first: x"), 2);
  EXPECT_EQ(rankNamedFirst("init timed out: 1 rank(s) never arrived: 4 (timed out)"), 4);
  EXPECT_EQ(rankNamedFirst("rank 1: connection from rank 2 closed"), -1);
}

TEST(ChaosJudge, ExpectedOutputsFollowTheCollectivesDefinitions) {
  Call call;
  call.kind = CallKind::ReduceScatter;
  call.count = 2;
  call.op = ncclSum;
  // Rank 1 of 3 gets elements 2 and 3 summed over ranks 0..2.
  const std::vector<double> scattered = expectedOutput(call, 5, 1, 3);
  ASSERT_EQ(scattered.size(), 2u);
  EXPECT_EQ(scattered[0], inputValue(0, 2, 5) + inputValue(1, 2, 5) + inputValue(2, 2, 5));
  call.kind = CallKind::AllGather;
  const std::vector<double> gathered = expectedOutput(call, 5, 0, 3);
  ASSERT_EQ(gathered.size(), 6u);
  EXPECT_EQ(gathered[5], inputValue(2, 1, 5));
  call.kind = CallKind::Reduce;
  call.root = 2;
  EXPECT_TRUE(expectedOutput(call, 5, 0, 3).empty()) << "a reduce defines no output off the root";
}

// A skip between two calls of the same shape is invisible to any check (the
// calls pair off by position), so the plan never draws one: trial 176 of
// seed 20261130 did, and its two ranks' results were judged wrong.
TEST(ChaosJudge, ASkippedCallIsFollowedByACallOfAnotherShape) {
  int skips = 0;
  for (int index = 0; index < 3000; ++index) {
    const TrialPlan plan = planTrial(20261130, index);
    if (plan.category != Category::Mismatch || plan.mismatchField != MismatchField::SkipCall) continue;
    ++skips;
    EXPECT_FALSE(sameShape(plan.calls[plan.mismatchCall], plan.calls[plan.mismatchCall + 1])) << plan.describe();
  }
  EXPECT_GT(skips, 20);
  Call a, b;
  a.kind = b.kind = CallKind::AllGather;
  a.op = ncclMax;
  EXPECT_TRUE(sameShape(a, b)) << "an all-gather has no operation";
  b.type = ncclFloat32;
  EXPECT_FALSE(sameShape(a, b));
}

TEST(ChaosJudge, TrialsReplayFromTheirSeed) {
  const TrialPlan a = planTrial(7, 3), b = planTrial(7, 3), c = planTrial(7, 4);
  EXPECT_EQ(a.describe(), b.describe());
  EXPECT_EQ(a.calls.size(), b.calls.size());
  EXPECT_NE(a.describe(), c.describe());
}

}  // namespace
}  // namespace hora::chaos
