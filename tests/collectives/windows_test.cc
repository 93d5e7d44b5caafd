// Collectives on windows: buffers from ncclMemAlloc registered with
// ncclCommWindowRegister on every rank. Between ranks of one host they then
// run without FIFOs, each rank reading and writing the other ranks' buffers
// directly (core/zero_copy.cc). Every type and reduction, empty, tiny and
// prime counts, in place and not, aligned and not, every root, as threads
// and as processes; HORA_ZERO_COPY_MIN is lowered so that small counts take
// the zero-copy path too (tests/core checks which path runs).
#include "case_matrix.h"
#include "matrix_params.h"

namespace hora_coll_test {
namespace {

std::vector<CollectiveCase> inWindows(std::vector<CollectiveCase> cases) {
  for (CollectiveCase& c : cases) c.inWindows = true;
  return cases;
}

class WindowMatrix : public ::testing::TestWithParam<MatrixParams> {};

TEST_P(WindowMatrix, EveryTypeAndReduction) {
  const MatrixParams params = GetParam();
  CaseMatrix matrix;
  matrix.collectives = {params.collective};
  // 1009 and 5003 are prime, so never split evenly between the ranks.
  matrix.counts = {0, 1, 7, 1009, 5003};
  matrix.seed = 21;
  RunOptions options = matrixRunOptions(params);
  options.environment.push_back({"HORA_ZERO_COPY_MIN", "1"});
  expectRanksSucceed(options, collectiveCasesProgram(inWindows(buildCases(matrix, params.nranks))));
}

// The collectives with a zero-copy path; all-to-all, gather and scatter
// (groups of sends and receives) take their usual path on windows.
const std::vector<Collective> kOnWindows = {Collective::AllReduce, Collective::ReduceScatter,
                                            Collective::AllGather, Collective::Broadcast,
                                            Collective::Reduce,    Collective::AlltoAll};

INSTANTIATE_TEST_SUITE_P(Threads, WindowMatrix,
                         ::testing::ValuesIn(matrixParams(kOnWindows, {2, 3, 4},
                                                          {RankMode::Threads})),
                         matrixParamName);
INSTANTIATE_TEST_SUITE_P(Processes, WindowMatrix,
                         ::testing::ValuesIn(matrixParams(kOnWindows, {2, 3},
                                                          {RankMode::Processes})),
                         matrixParamName);

// Sizes at the defaults: outputs beyond HORA_STREAMING_MIN (8 MiB) are
// written with streaming stores, from both processes at once.
TEST(Windows, LargeCollectivesBetweenProcesses) {
  CaseMatrix matrix;
  matrix.collectives = {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter};
  matrix.types = {ncclFloat32, ncclBfloat16};
  matrix.reductions = {Reduction::Sum};
  matrix.counts = {(16u << 20) / 4 + 3};
  matrix.seed = 22;
  RunOptions options;
  options.mode = RankMode::Processes;
  options.nranks = 2;
  options.deadline = std::chrono::seconds(120);
  expectRanksSucceed(options, collectiveCasesProgram(inWindows(buildCases(matrix, 2))));
}

}  // namespace
}  // namespace hora_coll_test
