// Every collective on every communicator size from 1 to 8 ranks (more ranks
// than cores is fine: ranks wait on sockets), with a few element types and
// reductions, so that a schedule that only works for small or even rank
// counts shows. Threads, and one thread driving all ranks.
#include "case_matrix.h"
#include "matrix_params.h"

namespace hora_coll_test {
namespace {

class RankCounts : public ::testing::TestWithParam<MatrixParams> {};

TEST_P(RankCounts, FewTypesEveryPlacement) {
  const MatrixParams params = GetParam();
  CaseMatrix matrix;
  matrix.collectives = {params.collective};
  matrix.types = {ncclFloat32, ncclInt8, ncclBfloat16, ncclFloat8e4m3, ncclUint64};
  matrix.reductions = {Reduction::Sum, Reduction::Max, Reduction::Avg, Reduction::PreMulSumHost};
  matrix.counts = {0, 1, 13, 4099};
  matrix.seed = 37 + params.nranks;
  RunOptions options = matrixRunOptions(params);
  expectRanksSucceed(options, collectiveCasesProgram(buildCases(matrix, params.nranks)));
}

INSTANTIATE_TEST_SUITE_P(Threads, RankCounts,
                         ::testing::ValuesIn(matrixParams(allCollectives(), {1, 2, 3, 4, 5, 6, 7, 8},
                                                          {RankMode::Threads})),
                         matrixParamName);
INSTANTIATE_TEST_SUITE_P(OneThread, RankCounts,
                         ::testing::ValuesIn(matrixParams(allCollectives(), {1, 2, 5, 8},
                                                          {RankMode::OneThread})),
                         matrixParamName);
INSTANTIATE_TEST_SUITE_P(Tcp, RankCounts,
                         ::testing::ValuesIn(matrixParams(allCollectives(), {2, 5, 8}, {RankMode::Threads},
                                                          "tcp")),
                         matrixParamName);

}  // namespace
}  // namespace hora_coll_test
