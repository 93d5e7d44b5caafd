// all_reduce, reduce_scatter and reduce: every element type with every
// reduction (sum, prod, max, min, avg, premulsum with either scalar
// residence), at counts that are empty, one element, prime (so never a
// multiple of the rank count) and several pipeline chunks long, placed in
// and out of place, aligned and not, at every root.
#include "case_matrix.h"
#include "matrix_params.h"

namespace hora_coll_test {
namespace {

class ReductionMatrix : public ::testing::TestWithParam<MatrixParams> {};

TEST_P(ReductionMatrix, EveryTypeAndReduction) {
  const MatrixParams params = GetParam();
  CaseMatrix matrix;
  matrix.collectives = {params.collective};
  matrix.counts = {0, 1, 7, 1009, 5003};
  matrix.seed = 11;
  RunOptions options = matrixRunOptions(params);
  expectRanksSucceed(options, collectiveCasesProgram(buildCases(matrix, params.nranks)));
}

const std::vector<Collective> kReducing = {Collective::AllReduce, Collective::ReduceScatter,
                                           Collective::Reduce};

INSTANTIATE_TEST_SUITE_P(Threads, ReductionMatrix,
                         ::testing::ValuesIn(matrixParams(kReducing, {2, 3, 4}, {RankMode::Threads})),
                         matrixParamName);
INSTANTIATE_TEST_SUITE_P(OneThread, ReductionMatrix,
                         ::testing::ValuesIn(matrixParams(kReducing, {4}, {RankMode::OneThread})),
                         matrixParamName);
INSTANTIATE_TEST_SUITE_P(Tcp, ReductionMatrix,
                         ::testing::ValuesIn(matrixParams(kReducing, {3}, {RankMode::Threads}, "tcp")),
                         matrixParamName);

}  // namespace
}  // namespace hora_coll_test
