// ncclCommSplit with ranks as threads: groups by colour, ranks by key then
// parent rank, NCCL_SPLIT_NOCOLOR, bad colours, and children that work on
// their own, also after the parent is gone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "local_comms.h"
#include "nccl_outcome.h"

namespace hora_api_test {
namespace {

struct Child {
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclInternalError;
  int rank = -1;
  int count = -1;
};

// Every rank of `comms` splits with its colour and key; the children.
std::vector<Child> splitAll(const LocalComms& comms, const std::vector<int>& colors, const std::vector<int>& keys) {
  std::vector<Child> children(comms.size());
  comms.onEachRank([&](int rank) {
    Child& child = children[rank];
    child.result = ncclCommSplit(comms[rank], colors[rank], keys[rank], &child.comm, nullptr);
    if (child.comm != nullptr) {
      ncclCommUserRank(child.comm, &child.rank);
      ncclCommCount(child.comm, &child.count);
    }
  });
  return children;
}

// An all-reduce of each rank's parent rank + 1 on every child, run by the
// ranks of `comms` at once; the sums per parent rank (-1 without a child).
std::vector<long long> sumsOnChildren(const LocalComms& comms, const std::vector<Child>& children) {
  std::vector<long long> sums(comms.size(), -1);
  comms.onEachRank([&](int rank) {
    if (children[rank].comm == nullptr) return;
    long long value = rank + 1;
    ASSERT_EQ(ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, children[rank].comm, nullptr), ncclSuccess)
        << ncclGetLastError(children[rank].comm);
    sums[rank] = value;
  });
  return sums;
}

void destroyAll(std::vector<Child>& children) {
  for (Child& child : children)
    if (child.comm != nullptr) EXPECT_EQ(ncclCommDestroy(child.comm), ncclSuccess);
}

TEST(CommSplit, GroupsByColourAndRanksByKeyThenParentRank) {
  LocalComms comms(5);
  // Colour 0: ranks 0, 2, 4 with keys 3, 1, 1 -> order 2, 4, 0. Colour 7: ranks 1, 3.
  auto children = splitAll(comms, {0, 7, 0, 7, 0}, {3, 0, 1, 0, 1});
  for (int r = 0; r < 5; ++r) ASSERT_EQ(children[r].result, ncclSuccess) << "rank " << r;
  EXPECT_EQ(children[0].rank, 2);
  EXPECT_EQ(children[2].rank, 0);
  EXPECT_EQ(children[4].rank, 1);
  EXPECT_EQ(children[1].rank, 0);
  EXPECT_EQ(children[3].rank, 1);
  EXPECT_EQ(children[0].count, 3);
  EXPECT_EQ(children[1].count, 2);
  EXPECT_EQ(sumsOnChildren(comms, children), (std::vector<long long>{9, 6, 9, 6, 9}));
  destroyAll(children);
}

TEST(CommSplit, NoColourTakesPartAndGetsNoCommunicator) {
  LocalComms comms(4);
  auto children = splitAll(comms, {NCCL_SPLIT_NOCOLOR, 1, 1, 1}, {0, 0, 0, 0});
  for (int r = 0; r < 4; ++r) ASSERT_EQ(children[r].result, ncclSuccess) << "rank " << r;
  EXPECT_EQ(children[0].comm, nullptr);
  EXPECT_EQ(children[1].count, 3);
  EXPECT_EQ(sumsOnChildren(comms, children), (std::vector<long long>{-1, 9, 9, 9}));
  destroyAll(children);
}

TEST(CommSplit, ChildrenOutliveTheirParent) {
  LocalComms comms(2);
  auto children = splitAll(comms, {0, 0}, {1, 0});
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(children[r].result, ncclSuccess);
    ASSERT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
    comms.release(r);
  }
  EXPECT_EQ(children[0].rank, 1);
  EXPECT_EQ(sumsOnChildren(comms, children), (std::vector<long long>{3, 3}));
  destroyAll(children);
}

TEST(CommSplit, ABadColourFailsEveryRankAndLeavesTheParentUsable) {
  LocalComms comms(3);
  auto children = splitAll(comms, {0, -5, 0}, {0, 0, 0});
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(children[r].result, ncclInvalidArgument) << "rank " << r;
    EXPECT_EQ(children[r].comm, nullptr);
  }
  std::vector<long long> sums(3, 0);
  comms.onEachRank([&](int rank) {
    long long value = 1;
    EXPECT_EQ(ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comms[rank], nullptr), ncclSuccess);
    sums[rank] = value;
  });
  EXPECT_EQ(sums, (std::vector<long long>{3, 3, 3}));
  ncclComm_t child = nullptr;
  EXPECT_EQ(ncclCommSplit(comms[0], 0, 0, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommSplit(nullptr, 0, 0, &child, nullptr), ncclInvalidArgument);
}

// One thread splits every rank's communicator inside a group: the splits
// (and the stamped all-reduce each opens with) run at ncclGroupEnd, all
// ranks at once.
TEST(CommSplit, OneThreadSplitsEveryRankInAGroup) {
  LocalComms comms(3);
  std::vector<Child> children(3);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(ncclCommSplit(comms[r], 0, 2 - r, &children[r].comm, nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 3; ++r) {
    ASSERT_NE(children[r].comm, nullptr) << "rank " << r;
    ncclCommUserRank(children[r].comm, &children[r].rank);
    EXPECT_EQ(children[r].rank, 2 - r) << "ranked by key";
  }
  EXPECT_EQ(sumsOnChildren(comms, children), (std::vector<long long>{6, 6, 6}));
  destroyAll(children);
}

}  // namespace
}  // namespace hora_api_test
