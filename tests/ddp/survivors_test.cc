// The Reducer going on past a killed rank, with ranks as processes: hora-run
// --keep-going runs ddp_reducer_process_test's survivors case, in which the
// last rank kills itself (SIGKILL) after constructing its Reducer. hora-run
// must report that rank and exit with its status (137) while every other
// rank shrinks past it and passes its checks of the averaged gradients.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "support/program_run.h"

namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::size_t countOf(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

class SurvivorsUnderHoraRun : public ::testing::TestWithParam<int> {};

INSTANTIATE_TEST_SUITE_P(Ranks, SurvivorsUnderHoraRun, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

TEST_P(SurvivorsUnderHoraRun, ShrinkPastTheKilledRankAndGoOn) {
  const int ranks = GetParam();
  hora::test_support::ProgramRun run;
  run.arguments = {hora::test_support::programFromEnvironment("HORA_RUN"), "-n", std::to_string(ranks),
                   "--keep-going", "--timeout", "60",
                   hora::test_support::programFromEnvironment("DDP_REDUCER_PROCESS_TEST"),
                   "--gtest_filter=*Survivors*"};
  run.timeoutSeconds = 90;
  const auto result = hora::test_support::runProgram(run);
  const std::string all = result.out + result.err;
  EXPECT_EQ(result.exitCode, 128 + 9) << all;
  EXPECT_THAT(result.err, AllOf(HasSubstr("rank " + std::to_string(ranks - 1) + " (pid "),
                                HasSubstr("was killed by signal 9"),
                                HasSubstr("the other ranks go on (--keep-going)")))
      << all;
  // Every survivor ran the test and passed it; the killed rank printed no verdict.
  EXPECT_EQ(countOf(result.out, "[  PASSED  ] 1 test."), static_cast<std::size_t>(ranks - 1)) << all;
  EXPECT_THAT(result.out, Not(HasSubstr("[  FAILED  ]"))) << all;
  EXPECT_THAT(result.out, Not(HasSubstr("[  SKIPPED ]"))) << all;
}

}  // namespace
