// all_gather, broadcast, alltoall, gather and scatter: every element type
// (the size is what matters to them, but a type-dependent bug would show),
// at empty, single, prime and multi-chunk counts, in and out of place,
// aligned and not, at every root.
#include "case_matrix.h"
#include "matrix_params.h"

namespace hora_coll_test {
namespace {

class DataMovementMatrix : public ::testing::TestWithParam<MatrixParams> {};

TEST_P(DataMovementMatrix, EveryTypeAndPlacement) {
  const MatrixParams params = GetParam();
  CaseMatrix matrix;
  matrix.collectives = {params.collective};
  matrix.counts = {0, 1, 7, 1009, 5003};
  matrix.seed = 23;
  RunOptions options = matrixRunOptions(params);
  // Twice through the types, so that each meets more placements and roots.
  std::vector<CollectiveCase> cases = buildCases(matrix, params.nranks);
  matrix.seed = 24;
  matrix.counts = {3, 2000};
  for (const auto& c : buildCases(matrix, params.nranks)) cases.push_back(c);
  expectRanksSucceed(options, collectiveCasesProgram(cases));
}

const std::vector<Collective> kMoving = {Collective::AllGather, Collective::Broadcast,
                                         Collective::AlltoAll, Collective::Gather,
                                         Collective::Scatter};

INSTANTIATE_TEST_SUITE_P(Threads, DataMovementMatrix,
                         ::testing::ValuesIn(matrixParams(kMoving, {2, 3, 4}, {RankMode::Threads})),
                         matrixParamName);
INSTANTIATE_TEST_SUITE_P(OneThread, DataMovementMatrix,
                         ::testing::ValuesIn(matrixParams(kMoving, {3}, {RankMode::OneThread})),
                         matrixParamName);
INSTANTIATE_TEST_SUITE_P(Tcp, DataMovementMatrix,
                         ::testing::ValuesIn(matrixParams(kMoving, {3}, {RankMode::Threads}, "tcp")),
                         matrixParamName);

}  // namespace
}  // namespace hora_coll_test
