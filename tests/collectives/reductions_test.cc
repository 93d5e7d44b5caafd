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

// A direct all-reduce sends its whole input to every other rank before it
// receives; pre-multiplied (avg, premulsum), those sends are built in the
// executor's staging slots, which free only once their bytes have left,
// and bytes to a rank that is no ring neighbour leave only once that rank
// accepts the connection, when it first receives (after its own sends).
// Direct all-reduces of 16 and 160 KiB with 1 KiB slices
// (HORA_DIRECT_MAX_BYTES raised to 1 MiB): the slots must hold every send
// of one (before, 4 ranks waited for each other until the deadline; 2
// ranks, all ring neighbours, could not).
TEST(DirectAllReduce, PreMultipliedSendsLargerThanSixteenSlices) {
  CaseMatrix matrix;
  matrix.collectives = {Collective::AllReduce};
  matrix.types = {ncclFloat32, ncclFloat64};
  matrix.reductions = {Reduction::Avg, Reduction::PreMulSumHost, Reduction::Sum};
  matrix.counts = {4099, 40009};
  matrix.seed = 13;
  for (int nranks : {2, 4}) {
    SCOPED_TRACE(::testing::Message() << nranks << " ranks");
    RunOptions options;
    options.nranks = nranks;
    options.environment = {{"HORA_DIRECT_MAX_BYTES", "1M"}, {"HORA_SLICE_SIZE", "1K"}, {"HORA_CHUNK_SIZE", "4K"},
                           {"HORA_TIMEOUT", "20"}};
    expectRanksSucceed(options, collectiveCasesProgram(buildCases(matrix, nranks)));
  }
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
