#include "collectives.h"

#include <gtest/gtest.h>

namespace hora::perf {
namespace {

TEST(Collectives, BusBandwidthFactors) {
  for (int n : {1, 2, 3, 4, 8, 16, 1000}) {
    const double d = n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::AllReduce, n), 2.0 * (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::ReduceScatter, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::AllGather, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::AlltoAll, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::Broadcast, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::Reduce, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::SendRecv, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::Gather, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::Scatter, n), (d - 1) / d) << n;
  }
  // Spot values as nccl-tests prints them for 8 ranks.
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::AllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::AllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::AllReduce, 1), 0.0);
}

TEST(Collectives, AlgorithmBandwidthIsGigabytesPerSecond) {
  EXPECT_DOUBLE_EQ(algorithmBandwidth(1'000'000'000, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(algorithmBandwidth(1 << 20, 1e-3), 1.048576);
  EXPECT_DOUBLE_EQ(algorithmBandwidth(8, 0.0), 0.0);
}

TEST(Collectives, WholeBufferCollectivesRoundToWholeElements) {
  for (Collective c :
       {Collective::AllReduce, Collective::Broadcast, Collective::Reduce, Collective::SendRecv}) {
    const CollectiveSizing s = sizeCollective(c, 1001, 4, 3);
    EXPECT_EQ(s.paramCount, 250u);
    EXPECT_EQ(s.sendCount, 250u);
    EXPECT_EQ(s.recvCount, 250u);
    EXPECT_EQ(s.bytes(4), 1000u);
  }
}

TEST(Collectives, SplitCollectivesCutEachRanksPieceTo16Bytes) {
  // 1 MiB of floats over 3 ranks: 262144 elements, 87381 per rank, cut to
  // 87380 (a multiple of 4 floats), as nccl-tests 2.13.12 and later do.
  const CollectiveSizing gather = sizeCollective(Collective::AllGather, 1 << 20, 4, 3);
  EXPECT_EQ(gather.paramCount, 87380u);
  EXPECT_EQ(gather.sendCount, 87380u);
  EXPECT_EQ(gather.recvCount, 262140u);
  EXPECT_EQ(gather.bytes(4), 1048560u);

  const CollectiveSizing scatter = sizeCollective(Collective::ReduceScatter, 1 << 20, 4, 3);
  EXPECT_EQ(scatter.paramCount, 87380u);
  EXPECT_EQ(scatter.sendCount, 262140u);
  EXPECT_EQ(scatter.recvCount, 87380u);
  EXPECT_EQ(scatter.bytes(4), 1048560u);

  const CollectiveSizing alltoall = sizeCollective(Collective::AlltoAll, 1 << 20, 4, 3);
  EXPECT_EQ(alltoall.paramCount, 87380u);
  EXPECT_EQ(alltoall.sendCount, 262140u);
  EXPECT_EQ(alltoall.recvCount, 262140u);

  // nccl-tests' gather_perf and scatter_perf: the root's buffer is whole.
  const CollectiveSizing toRoot = sizeCollective(Collective::Gather, 1 << 20, 4, 3);
  EXPECT_EQ(toRoot.paramCount, 87380u);
  EXPECT_EQ(toRoot.sendCount, 87380u);
  EXPECT_EQ(toRoot.recvCount, 262140u);
  const CollectiveSizing fromRoot = sizeCollective(Collective::Scatter, 1 << 20, 4, 3);
  EXPECT_EQ(fromRoot.paramCount, 87380u);
  EXPECT_EQ(fromRoot.sendCount, 262140u);
  EXPECT_EQ(fromRoot.recvCount, 87380u);

  // 1000 bytes over 2 ranks: 500 per rank, 496 bytes each (bytes, floats
  // and doubles alike: 16 bytes is 16, 4 or 2 elements).
  EXPECT_EQ(sizeCollective(Collective::AllGather, 1000, 1, 2).bytes(1), 992u);
  EXPECT_EQ(sizeCollective(Collective::AllGather, 1000, 4, 2).bytes(4), 992u);
  EXPECT_EQ(sizeCollective(Collective::AllGather, 1000, 8, 2).bytes(8), 992u);
  // Whole-buffer collectives are not cut.
  EXPECT_EQ(sizeCollective(Collective::AllReduce, 1000, 4, 3).bytes(4), 1000u);
}

TEST(Collectives, TooSmallForEveryRankIsEmpty) {
  // 8 bytes of float: 2 elements cannot give each of 3 ranks one.
  EXPECT_EQ(sizeCollective(Collective::AllGather, 8, 4, 3).bytes(4), 0u);
  EXPECT_EQ(sizeCollective(Collective::AllReduce, 3, 4, 3).bytes(4), 0u);
  // One float per rank is less than 16 bytes; four are just enough.
  EXPECT_EQ(sizeCollective(Collective::AllGather, 12, 4, 3).bytes(4), 0u);
  EXPECT_EQ(sizeCollective(Collective::AllGather, 48, 4, 3).bytes(4), 48u);
}

TEST(Collectives, NamesAndProperties) {
  EXPECT_EQ(parseCollectiveName("all_reduce_perf"), Collective::AllReduce);
  EXPECT_EQ(parseCollectiveName("alltoall"), Collective::AlltoAll);
  EXPECT_FALSE(parseCollectiveName("all_reduce_perf_perf"));
  EXPECT_FALSE(parseCollectiveName(""));
  EXPECT_FALSE(parseCollectiveName("_perf"));
  EXPECT_TRUE(collectiveInfo(Collective::Reduce).reduces);
  EXPECT_TRUE(collectiveInfo(Collective::Reduce).rooted);
  EXPECT_FALSE(collectiveInfo(Collective::AllGather).reduces);
  EXPECT_EQ(collectiveInfo(Collective::AlltoAll).inPlace, InPlaceForm::TimedOnly);
  EXPECT_EQ(collectiveInfo(Collective::SendRecv).inPlace, InPlaceForm::TimedOnly);
  EXPECT_EQ(collectiveInfo(Collective::ReduceScatter).inPlace, InPlaceForm::Checked);
  EXPECT_TRUE(collectiveInfo(Collective::Gather).rooted);
  EXPECT_FALSE(collectiveInfo(Collective::Scatter).reduces);
  EXPECT_EQ(collectiveInfo(Collective::Scatter).inPlace, InPlaceForm::Checked);
  EXPECT_EQ(allCollectives().size(), 9u);
}

}  // namespace
}  // namespace hora::perf
