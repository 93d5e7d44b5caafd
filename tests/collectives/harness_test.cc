// The harness itself: failures, crashes and hangs of a rank must reach the
// test that ran it, named by rank, within the deadline. (The process-mode
// checks come first: they fork, and this program should not yet have the
// threads that the thread-mode checks leave behind.)
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "run_ranks.h"
#include "simple_program.h"

namespace hora_coll_test {
namespace {

// A program of one step that calls nothing collective and runs `body`.
ProgramFactory oneStep(std::function<void(RankContext&)> body) {
  return programOf([body](int, int) {
    SimpleStep step;
    step.name = "harness check";
    step.launch = [body](RankContext& c) {
      body(c);
      return ncclSuccess;
    };
    return std::vector<SimpleStep>{step};
  });
}

RunOptions processes(int nranks) {
  RunOptions options;
  options.mode = RankMode::Processes;
  options.nranks = nranks;
  options.deadline = std::chrono::seconds(30);
  return options;
}

TEST(ProcessHarness, AllRanksPassing) {
  RunOutcome outcome = runRanks(processes(3), oneStep([](RankContext& c) {
    c.agreement = "same";
  }));
  EXPECT_TRUE(outcome.ok()) << outcome.summary();
  EXPECT_TRUE(outcome.agree());
}

TEST(ProcessHarness, ReportsTheFailureTextOfTheFailingRank) {
  RunOutcome outcome = runRanks(processes(3), oneStep([](RankContext& c) {
    if (c.rank == 1) ADD_FAILURE() << "deliberate failure on rank " << c.rank;
  }));
  ASSERT_EQ(outcome.ranks.size(), 3u);
  EXPECT_FALSE(outcome.ok());
  EXPECT_FALSE(outcome.ranks[0].failed);
  EXPECT_TRUE(outcome.ranks[1].failed);
  EXPECT_FALSE(outcome.ranks[2].failed);
  EXPECT_NE(outcome.ranks[1].report.find("deliberate failure on rank 1"), std::string::npos)
      << outcome.ranks[1].report;
  EXPECT_NE(outcome.summary().find("rank 1: FAILED"), std::string::npos) << outcome.summary();
}

TEST(ProcessHarness, ReportsACrashedRank) {
  RunOutcome outcome = runRanks(processes(2), oneStep([](RankContext& c) {
    if (c.rank == 0) std::raise(SIGKILL);  // dies at once, reporting nothing
  }));
  EXPECT_TRUE(outcome.ranks[0].failed);
  EXPECT_NE(outcome.ranks[0].report.find("killed by signal 9"), std::string::npos)
      << outcome.ranks[0].report;
  EXPECT_FALSE(outcome.ranks[1].failed) << outcome.ranks[1].report;
}

TEST(ProcessHarness, KillsRanksStillRunningAtTheDeadline) {
  RunOptions options = processes(2);
  options.deadline = std::chrono::seconds(2);
  const auto start = std::chrono::steady_clock::now();
  RunOutcome outcome = runRanks(options, oneStep([](RankContext& c) {
    if (c.rank == 1) std::this_thread::sleep_for(std::chrono::seconds(60));
  }));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_FALSE(outcome.ranks[0].failed) << outcome.ranks[0].report;
  EXPECT_TRUE(outcome.ranks[1].failed);
  EXPECT_NE(outcome.ranks[1].report.find("killed"), std::string::npos) << outcome.ranks[1].report;
}

TEST(ProcessHarness, NoticesRanksThatDisagree) {
  RunOutcome outcome = runRanks(processes(2), oneStep([](RankContext& c) {
    c.agreement = "value of rank " + std::to_string(c.rank);
  }));
  EXPECT_TRUE(outcome.ok()) << outcome.summary();
  EXPECT_FALSE(outcome.agree());
}

TEST(ProcessHarness, ReportsAFailedNcclCallAndStopsTheRank) {
  RunOutcome outcome = runRanks(processes(2), programOf([](int, int) {
    SimpleStep bad;
    bad.name = "a send to a rank that does not exist";
    bad.launch = [](RankContext& c) {
      return c.rank == 0 ? ncclSend(nullptr, 0, ncclFloat32, 7, c.comm, nullptr) : ncclSuccess;
    };
    SimpleStep never;
    never.name = "a step after the failure";
    never.launch = [](RankContext& c) {
      if (c.rank == 0) ADD_FAILURE() << "rank 0 went on after a failed call";
      return ncclSuccess;
    };
    return std::vector<SimpleStep>{bad, never};
  }));
  EXPECT_TRUE(outcome.ranks[0].failed);
  EXPECT_NE(outcome.ranks[0].report.find("a send to a rank that does not exist"), std::string::npos)
      << outcome.ranks[0].report;
  EXPECT_EQ(outcome.ranks[0].report.find("went on"), std::string::npos) << outcome.ranks[0].report;
}

TEST(ThreadHarness, AFailingRankIsReportedWithItsRank) {
  RunOptions options;
  options.mode = RankMode::Threads;
  options.nranks = 3;
  EXPECT_NONFATAL_FAILURE_ON_ALL_THREADS(runRanks(options, oneStep([](RankContext& c) {
                                           if (c.rank == 2) ADD_FAILURE() << "deliberate";
                                         })),
                                         "rank 2 of 3 (threads)");
}

TEST(ThreadHarness, OneThreadDrivesEveryRank) {
  RunOptions options;
  options.mode = RankMode::OneThread;
  options.nranks = 4;
  std::vector<int> seen;
  RunOutcome outcome = runRanks(options, oneStep([&seen](RankContext& c) { seen.push_back(c.rank); }));
  EXPECT_TRUE(outcome.ok()) << outcome.summary();
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace hora_coll_test
