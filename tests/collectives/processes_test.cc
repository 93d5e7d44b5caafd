// Ranks as separate processes (fork; each child makes the unique id from
// HORA_COMM_ID): every collective with every element type and a choice of
// reductions, and point-to-point traffic, over hora's default transport
// between processes of one host and over TCP.
//
// The parent of the children never calls hora, so that it has no threads
// when it forks; keep it that way in this file.
#include <chrono>
#include <cstdio>

#include "case_matrix.h"
#include "matrix_params.h"
#include "message_plan.h"

namespace hora_coll_test {
namespace {

class ProcessMatrix : public ::testing::TestWithParam<MatrixParams> {};

TEST_P(ProcessMatrix, EveryTypeSomeReductions) {
  const MatrixParams params = GetParam();
  CaseMatrix matrix;
  matrix.collectives = {params.collective};
  matrix.reductions = {Reduction::Sum, Reduction::Prod, Reduction::Min, Reduction::Avg,
                       Reduction::PreMulSumDevice};
  matrix.counts = {0, 7, 1009};
  matrix.seed = 71;
  expectRanksSucceed(matrixRunOptions(params), collectiveCasesProgram(buildCases(matrix, params.nranks)));
}

INSTANTIATE_TEST_SUITE_P(Processes, ProcessMatrix,
                         ::testing::ValuesIn(matrixParams(allCollectives(), {2, 3}, {RankMode::Processes})),
                         matrixParamName);
INSTANTIATE_TEST_SUITE_P(ProcessesTcp, ProcessMatrix,
                         ::testing::ValuesIn(matrixParams(allCollectives(), {4}, {RankMode::Processes},
                                                          "tcp")),
                         matrixParamName);

// Many more ranks than cores (64 processes on a CI machine's 2): each rank
// must give the core up while it waits (wait_mode.h) or the job crawls.
// Every collective once, checked exactly; how long it takes is printed,
// the deadline only guards against a hang.
TEST(ProcessOversubscription, SixtyFourRanksRunEveryCollectiveOnce) {
  CaseMatrix matrix;
  matrix.collectives = allCollectives();
  matrix.types = {ncclInt32};
  matrix.reductions = {Reduction::Sum};
  matrix.counts = {1009};
  matrix.varyPlacement = false;
  RunOptions options;
  options.mode = RankMode::Processes;
  options.nranks = 64;
  options.deadline = std::chrono::seconds(120);
  const auto start = std::chrono::steady_clock::now();
  expectRanksSucceed(options, collectiveCasesProgram(buildCases(matrix, options.nranks)));
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  std::printf("64 ranks, every collective once: %.2f s\n", elapsed.count());
}

class ProcessPointToPoint : public ::testing::TestWithParam<std::string> {
 protected:
  RunOptions options() const {
    RunOptions o;
    o.mode = RankMode::Processes;
    o.nranks = 3;
    o.environment = smallPipeline();
    if (!GetParam().empty()) o.environment.push_back({"HORA_TRANSPORT", GetParam()});
    return o;
  }
};

TEST_P(ProcessPointToPoint, RingShiftsPairsAndUnevenAllToAll) {
  std::vector<MessageStep> steps = ringShiftSteps(3, {1, 5003}, 1200);
  for (const auto& step : allPairsSteps(3, 300, 1300)) steps.push_back(step);
  steps.push_back(unevenAllToAllStep(3, 1400));
  steps.push_back(orderedMessagesStep(3, 1500));
  expectRanksSucceed(options(), messagesProgram(steps));
}

INSTANTIATE_TEST_SUITE_P(Transports, ProcessPointToPoint, ::testing::Values("", "tcp"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.empty() ? std::string("default") : info.param;
                         });

}  // namespace
}  // namespace hora_coll_test
