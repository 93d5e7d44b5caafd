// Groups: every collective kind in one group, collectives mixed with
// point-to-point traffic, nested groups, and communicators driven together
// by one thread -- communicators of different sizes from ncclCommInitAll,
// and two communicators per rank thread.
#include <gtest/gtest.h>

#include "collective_case.h"
#include "grouped_programs.h"
#include "matrix_params.h"
#include "message_plan.h"
#include "run_modes.h"

namespace hora_coll_test {
namespace {

// One group per step holding all eight collectives, with varied types,
// reductions, counts, roots and placements.
std::vector<std::vector<CollectiveCase>> everyCollectivePerStep(int nranks, int steps,
                                                                std::uint64_t seed) {
  const ncclDataType_t types[] = {ncclFloat32, ncclInt8,    ncclFloat16, ncclInt32,
                                  ncclFloat64, ncclUint8,   ncclBfloat16, ncclUint64};
  const Reduction reductions[] = {Reduction::Sum, Reduction::Max, Reduction::PreMulSumDevice,
                                  Reduction::Min, Reduction::Prod};
  std::vector<std::vector<CollectiveCase>> all;
  std::size_t k = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<CollectiveCase> group;
    for (Collective collective : allCollectives()) {
      CollectiveCase c;
      c.collective = collective;
      c.type = types[k % 8];
      c.reduction = reductions[k % 5];
      c.count = (k % 3 == 0) ? 1 : 37 + 611 * (k % 4);
      c.root = static_cast<int>((k + 1) % nranks);
      c.inPlace = supportsInPlace(collective) && k % 2 == 1;
      c.unaligned = k % 4 >= 2;
      c.seed = seed + k;
      group.push_back(c);
      ++k;
    }
    all.push_back(group);
  }
  return all;
}

class Groups : public ::testing::TestWithParam<MatrixParams> {};

TEST_P(Groups, EveryCollectiveInOneGroup) {
  const int n = GetParam().nranks;
  expectRanksSucceed(matrixRunOptions(GetParam()), collectiveStepsProgram(everyCollectivePerStep(n, 4, 500)));
}

TEST_P(Groups, CollectivesAndPointToPointInOneGroup) {
  const int n = GetParam().nranks;
  // One ring-shift step per shift distance, each beside a group of collectives.
  std::vector<MessageStep> messages = ringShiftSteps(n, {613}, 600);
  expectRanksSucceed(matrixRunOptions(GetParam()),
                     groupedTogether({collectiveStepsProgram(everyCollectivePerStep(
                                          n, static_cast<int>(messages.size()), 700)),
                                      messagesProgram(messages)}));
}

TEST_P(Groups, NestedGroupsRunAtTheOutermostEnd) {
  // groupedTogether opens a group around a program that opens its own.
  const int n = GetParam().nranks;
  expectRanksSucceed(matrixRunOptions(GetParam()),
                     groupedTogether({collectiveStepsProgram(everyCollectivePerStep(n, 2, 800))}));
}

std::string groupsName(const ::testing::TestParamInfo<MatrixParams>& info) {
  return std::to_string(info.param.nranks) + "ranks_" +
         (info.param.mode == RankMode::Threads ? "threads" : "onethread");
}

INSTANTIATE_TEST_SUITE_P(Ranks, Groups,
                         ::testing::Values(MatrixParams{Collective::AllReduce, 2, RankMode::Threads, ""},
                                           MatrixParams{Collective::AllReduce, 3, RankMode::Threads, ""},
                                           MatrixParams{Collective::AllReduce, 4, RankMode::OneThread, ""},
                                           MatrixParams{Collective::AllReduce, 5, RankMode::OneThread, ""}),
                         groupsName);

TEST(GroupCalls, EmptyGroupsSucceed) {
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
}

// One thread, two communicators of different sizes (2 and 3 ranks), every
// rank of both driven inside one group per step.
TEST(SeveralCommunicators, OneThreadDrivesCommunicatorsOfDifferentSizes) {
  ScopedEnvironment environment(std::vector<std::pair<std::string, std::string>>{{"HORA_SOCKET_IFNAME", "lo"}});
  const std::vector<int> sizes = {2, 3};
  Watchdog watchdog(std::chrono::seconds(60), "two communicators from one thread",
                    [] { return std::string("the group did not complete"); });
  struct Rank {
    ncclComm_t comm;
    RankContext context;
    std::unique_ptr<RankProgram> program;
  };
  std::vector<Rank> ranks;
  std::vector<ncclComm_t> all;
  for (int size : sizes) {
    std::vector<ncclComm_t> comms(size);
    ASSERT_EQ(ncclCommInitAll(comms.data(), size, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
    ProgramFactory factory = collectiveStepsProgram(everyCollectivePerStep(size, 3, 900 + size));
    for (int r = 0; r < size; ++r) {
      Rank rank{comms[r], RankContext{r, size, comms[r], ""}, factory(r, size)};
      ranks.push_back(std::move(rank));
      all.push_back(comms[r]);
    }
  }
  for (int step = 0; step < 3; ++step) {
    for (auto& rank : ranks) rank.program->prepare(step, rank.context);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (auto& rank : ranks) EXPECT_EQ(rank.program->launch(step, rank.context), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
    for (auto& rank : ranks) {
      SCOPED_TRACE("communicator of " + std::to_string(rank.context.nranks) + " ranks, rank " +
                   std::to_string(rank.context.rank));
      rank.program->verify(step, rank.context);
    }
  }
  for (auto& rank : ranks) rank.program->finish(rank.context);
  for (ncclComm_t comm : all) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Each rank thread drives two communicators over the same ranks: the
// harness's, and a second made in the program's constructor; each step is
// one group with collectives on both.
class TwoCommunicatorsProgram : public RankProgram {
 public:
  TwoCommunicatorsProgram(const ncclUniqueId& second, int rank, int nranks)
      : onFirst_(collectiveStepsProgram(everyCollectivePerStep(nranks, 3, 1000))(rank, nranks)),
        onSecond_(collectiveStepsProgram(everyCollectivePerStep(nranks, 3, 1100))(rank, nranks)) {
    secondContext_.rank = rank;
    secondContext_.nranks = nranks;
    initResult_ = ncclCommInitRank(&secondContext_.comm, nranks, second, rank);
  }
  int steps() const override { return 3; }
  std::string describeStep(int step) const override {
    return "on both communicators: " + onFirst_->describeStep(step);
  }
  void prepare(int step, RankContext& context) override {
    onFirst_->prepare(step, context);
    onSecond_->prepare(step, secondContext_);
  }
  ncclResult_t launch(int step, RankContext& context) override {
    if (initResult_ != ncclSuccess) return initResult_;
    ncclGroupStart();
    ncclResult_t first = onFirst_->launch(step, context);
    ncclResult_t second = onSecond_->launch(step, secondContext_);
    ncclResult_t ended = ncclGroupEnd();
    return first != ncclSuccess ? first : second != ncclSuccess ? second : ended;
  }
  void verify(int step, RankContext& context) override {
    onFirst_->verify(step, context);
    onSecond_->verify(step, secondContext_);
  }
  void finish(RankContext& context) override {
    onFirst_->finish(context);
    onSecond_->finish(secondContext_);
    if (secondContext_.comm != nullptr) {
      EXPECT_EQ(ncclCommDestroy(secondContext_.comm), ncclSuccess);
    }
  }

 private:
  std::unique_ptr<RankProgram> onFirst_, onSecond_;
  RankContext secondContext_;
  ncclResult_t initResult_ = ncclSuccess;
};

TEST(SeveralCommunicators, EachRankThreadDrivesTwoCommunicatorsInOneGroup) {
  ScopedEnvironment environment(std::vector<std::pair<std::string, std::string>>{{"HORA_SOCKET_IFNAME", "lo"}});
  ncclUniqueId second;
  ASSERT_EQ(ncclGetUniqueId(&second), ncclSuccess);
  RunOptions options;
  options.mode = RankMode::Threads;
  options.nranks = 3;
  expectRanksSucceed(options, [second](int rank, int nranks) -> std::unique_ptr<RankProgram> {
    return std::make_unique<TwoCommunicatorsProgram>(second, rank, nranks);
  });
}

// One thread makes every rank's communicator and issues each rank's calls
// right after its init, all in one group: a call on a communicator still
// being made is checked and queued at ncclGroupEnd, once the group's inits
// are done, as NCCL's are (waiting for that init at the call would wait
// for ranks this thread has not issued yet); so is a split of it.
TEST(SeveralCommunicators, OneThreadMakesEachRankAndCallsOnItInOneGroup) {
  ScopedEnvironment environment(std::vector<std::pair<std::string, std::string>>{{"HORA_SOCKET_IFNAME", "lo"}});
  Watchdog watchdog(std::chrono::seconds(60), "inits and calls in one group",
                    [] { return std::string("the group did not complete"); });
  constexpr int kRanks = 3;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(kRanks, nullptr);
  std::vector<ncclComm_t> children(kRanks, nullptr);
  std::vector<long long> values = {1, 20, 300}, sums(kRanks, 0), broadcast = {0, 0, 77};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_EQ(ncclCommInitRank(&comms[rank], kRanks, id, rank), ncclSuccess) << ncclGetLastError(nullptr);
    ASSERT_EQ(ncclAllReduce(&values[rank], &sums[rank], 1, ncclInt64, ncclSum, comms[rank], nullptr), ncclSuccess)
        << ncclGetLastError(nullptr);
    ASSERT_EQ(ncclBroadcast(&broadcast[rank], &broadcast[rank], 1, ncclInt64, 2, comms[rank], nullptr), ncclSuccess)
        << ncclGetLastError(nullptr);
    // Ranks 0 and 2 split off (rank 2 first), rank 1 takes no part.
    ASSERT_EQ(ncclCommSplit(comms[rank], rank == 1 ? NCCL_SPLIT_NOCOLOR : 0, -rank, &children[rank], nullptr),
              ncclSuccess)
        << ncclGetLastError(nullptr);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(sums, std::vector<long long>(kRanks, 321));
  EXPECT_EQ(broadcast, std::vector<long long>(kRanks, 77));
  EXPECT_EQ(children[1], nullptr);
  for (int rank : {0, 2}) {
    int count = 0, childRank = -1;
    ASSERT_NE(children[rank], nullptr);
    EXPECT_EQ(ncclCommCount(children[rank], &count), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(children[rank], &childRank), ncclSuccess);
    EXPECT_EQ(count, 2);
    EXPECT_EQ(childRank, rank == 2 ? 0 : 1);
  }
  for (ncclComm_t child : {children[0], children[2]}) EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);

  // A call whose arguments only the communicator can check (a root outside
  // it) fails the group at its end, naming the call, and runs nothing.
  ncclUniqueId second;
  ASSERT_EQ(ncclGetUniqueId(&second), ncclSuccess);
  std::vector<ncclComm_t> others(2, nullptr);
  std::vector<long long> untouched = {5, 6};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(ncclCommInitRank(&others[rank], 2, second, rank), ncclSuccess) << ncclGetLastError(nullptr);
    ASSERT_EQ(ncclAllReduce(&untouched[rank], &untouched[rank], 1, ncclInt64, ncclSum, others[rank], nullptr),
              ncclSuccess);
    if (rank == 0)
      ASSERT_EQ(ncclBroadcast(&untouched[0], &untouched[0], 1, ncclInt64, 7, others[0], nullptr), ncclSuccess);
  }
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  const std::string why = ncclGetLastError(nullptr);
  EXPECT_NE(why.find("ncclBroadcast"), std::string::npos) << why;
  EXPECT_NE(why.find("7"), std::string::npos) << why;
  EXPECT_EQ(untouched, (std::vector<long long>{5, 6}));
  for (ncclComm_t comm : others) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
}  // namespace hora_coll_test
