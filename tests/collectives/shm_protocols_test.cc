// The shared-memory transport's two protocols under the collectives:
//  - a small FIFO (64 KiB: slots of 8 KiB) with steps and slices that are
//    not whole slots, so that reductions in place read their operand from
//    the previous rank's slots and write their result into the next rank's
//    across slot boundaries (a slice of 12 KiB is rounded to one slot);
//  - sizes on both sides of an LL limit of 512 bytes (HORA_LL_MAX_BYTES, set
//    here: LL is off by default on CPUs), so that operations taken by LL and
//    by Simple follow each other on the same connections, between threads
//    and between processes;
//  - operations far larger than the LL FIFO holds, all taken by LL.
#include <gtest/gtest.h>

#include "case_matrix.h"
#include "run_ranks.h"
#include "simple_program.h"

namespace hora_coll_test {
namespace {

RunOptions options(int nranks, std::vector<std::pair<std::string, std::string>> environment,
                   RankMode mode = RankMode::Threads) {
  RunOptions o;
  o.mode = mode;
  o.nranks = nranks;
  o.environment = std::move(environment);
  o.environment.push_back({"HORA_TRANSPORT", "shm"});
  return o;
}

TEST(ShmProtocols, ReductionsInPlaceAcrossSlotBoundaries) {
  CaseMatrix matrix;
  matrix.collectives = allCollectives();
  matrix.types = {ncclFloat32, ncclUint8, ncclFloat64};
  matrix.reductions = {Reduction::Sum};
  // Several slots per step and per rank; primes, so nothing lines up.
  matrix.counts = {10007, 40009};
  matrix.seed = 71;
  for (int nranks : {2, 3}) {
    SCOPED_TRACE(::testing::Message() << nranks << " ranks");
    expectRanksSucceed(options(nranks, {{"HORA_SHM_FIFO_SIZE", "64K"},
                                        {"HORA_CHUNK_SIZE", "20K"},
                                        {"HORA_SLICE_SIZE", "12K"}}),
                       collectiveCasesProgram(buildCases(matrix, nranks)));
  }
}

TEST(ShmProtocols, SizesAroundTheLLLimitFollowEachOther) {
  CaseMatrix matrix;
  matrix.collectives = allCollectives();
  matrix.types = {ncclUint8, ncclFloat32};
  matrix.reductions = {Reduction::Sum, Reduction::Max};
  // 512 bytes of one type or the other, one element under and over, and tiny.
  matrix.counts = {1, 2, 127, 128, 129, 511, 512, 513};
  matrix.seed = 72;
  for (RankMode mode : {RankMode::Threads, RankMode::Processes}) {
    SCOPED_TRACE(mode == RankMode::Threads ? "threads" : "processes");
    expectRanksSucceed(options(3, {{"HORA_LL_MAX_BYTES", "512"}}, mode),
                       collectiveCasesProgram(buildCases(matrix, 3)));
  }
}

// LL for everything up to 1 MiB: blocks and steps larger than the LL FIFO
// holds (32 KiB of data) are cut into steps that fit in half of it. Before,
// an all-gather of 40 KiB blocks on 3 ranks left every rank waiting for
// room in the next one's full FIFO until the deadline.
TEST(ShmProtocols, OperationsLargerThanTheLLFifoTakeLL) {
  CaseMatrix matrix;
  matrix.collectives = allCollectives();
  matrix.types = {ncclFloat32};
  matrix.reductions = {Reduction::Sum};
  matrix.counts = {10007, 40009};  // 40 and 160 KiB per rank
  matrix.seed = 73;
  for (int nranks : {2, 3}) {
    SCOPED_TRACE(::testing::Message() << nranks << " ranks");
    expectRanksSucceed(options(nranks, {{"HORA_LL_MAX_BYTES", "1M"}, {"HORA_TIMEOUT", "20"}}),
                       collectiveCasesProgram(buildCases(matrix, nranks)));
  }
}

}  // namespace
}  // namespace hora_coll_test
