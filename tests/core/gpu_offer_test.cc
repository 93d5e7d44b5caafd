// The channel agreement of the CUDA executor (device/gpu_offer.h), from
// what ranks offer about their GPUs: a GPU is known by its UUID, so ranks
// on one GPU share its blocks whatever ordinal their processes give it or
// host id they were given, and ranks on different GPUs with the same
// ordinal do not.
#include "device/gpu_offer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device/device_plan.h"

namespace hora::device {
namespace {

GpuUuid uuidOf(std::uint8_t tag) {
  GpuUuid uuid{};
  for (std::size_t i = 0; i < uuid.size(); ++i) uuid[i] = static_cast<std::uint8_t>(tag + i);
  return uuid;
}

GpuOffer offer(std::uint8_t gpu, std::int32_t ordinal, std::uint64_t host, std::uint64_t process,
               std::int32_t residentBlocks = 132) {
  GpuOffer g{};
  g.hostHash = host;
  g.process = process;
  g.pid = static_cast<std::int64_t>(process);
  g.uuid = uuidOf(gpu);
  g.device = ordinal;
  g.residentBlocks = residentBlocks;
  g.minChannels = 1;
  g.maxChannels = 32;
  g.llMaxBytes = 1 << 20;
  return g;
}

const std::vector<int> kRingOfThree = {0, 1, 2};

TEST(GpuOffers, AGpuIsNamedByItsUuidAsNvidiaSmiNamesIt) {
  GpuUuid uuid{};
  for (std::size_t i = 0; i < uuid.size(); ++i) uuid[i] = static_cast<std::uint8_t>(0xa0 + i);
  EXPECT_EQ(gpuName(uuid), "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
}

// CUDA_VISIBLE_DEVICES=3 in one process and =1,3 in another: one GPU,
// ordinals 0 and 1. Counted by ordinal they looked like two GPUs, each with
// all its blocks for one rank.
TEST(GpuOffers, RanksOnOneGpuShareItWhateverOrdinalTheirProcessGivesIt) {
  const std::vector<GpuOffer> gpus = {offer(7, 0, 1, 100, 4), offer(7, 1, 1, 200, 4), offer(7, 0, 1, 300, 4)};
  EXPECT_EQ(ranksOnGpu(gpus, gpus[0], /*sameProcess=*/false), 3);
  EXPECT_EQ(ranksOnGpu(gpus, gpus[0], /*sameProcess=*/true), 1);
  const ChannelAgreement agreed = agreeOnChannels(gpus, kRingOfThree, true);
  EXPECT_TRUE(agreed.unusable.empty()) << agreed.unusable;
  EXPECT_EQ(agreed.maxChannels, channelsPerRank(4, 3, 32));
  EXPECT_EQ(agreed.maxChannels, 1);
}

TEST(GpuOffers, TooManyRanksOnOneGpuAreRefusedNamingIt) {
  const std::vector<GpuOffer> gpus = {offer(7, 0, 1, 100, 2), offer(7, 1, 1, 200, 2), offer(7, 0, 1, 300, 2)};
  const ChannelAgreement agreed = agreeOnChannels(gpus, kRingOfThree, true);
  EXPECT_NE(agreed.unusable.find("3 ranks share " + gpuName(uuidOf(7))), std::string::npos) << agreed.unusable;
}

// Ordinal 0 in three processes, each shown a different GPU.
TEST(GpuOffers, OneOrdinalInSeveralProcessesCanNameDifferentGpus) {
  const std::vector<GpuOffer> gpus = {offer(1, 0, 1, 100, 8), offer(2, 0, 1, 200, 8), offer(3, 0, 1, 300, 8)};
  EXPECT_EQ(ranksOnGpu(gpus, gpus[1], false), 1);
  const ChannelAgreement agreed = agreeOnChannels(gpus, kRingOfThree, true);
  EXPECT_EQ(agreed.maxChannels, 8);  // each rank has its GPU's 8 blocks
  EXPECT_FALSE(agreed.crossesHosts);
}

// NCCL_HOSTID set differently for ranks on one machine and one GPU: the
// ring crosses "hosts" (through the network proxy), but the GPU's blocks
// are still shared by all of its ranks.
TEST(GpuOffers, RanksGivenDifferentHostIdsOnOneGpuStillShareIt) {
  const std::vector<GpuOffer> gpus = {offer(7, 0, 1, 100, 2), offer(7, 0, 2, 200, 2), offer(7, 0, 3, 300, 2)};
  const ChannelAgreement agreed = agreeOnChannels(gpus, kRingOfThree, true);
  EXPECT_NE(agreed.unusable.find("3 ranks share"), std::string::npos) << agreed.unusable;
}

TEST(GpuOffers, ARingAcrossHostsRunsOneChannelWithoutLL) {
  const std::vector<GpuOffer> gpus = {offer(1, 0, 1, 100), offer(2, 1, 1, 100), offer(3, 0, 2, 300)};
  ChannelAgreement agreed = agreeOnChannels(gpus, kRingOfThree, true);
  EXPECT_TRUE(agreed.crossesHosts);
  EXPECT_TRUE(agreed.unusable.empty()) << agreed.unusable;
  EXPECT_EQ(agreed.maxChannels, 1);
  EXPECT_EQ(agreed.minChannels, 1);
  EXPECT_EQ(agreed.llMaxBytes, 0u);
  agreed = agreeOnChannels(gpus, kRingOfThree, /*networkPossible=*/false);
  EXPECT_NE(agreed.unusable.find("crosses hosts"), std::string::npos) << agreed.unusable;
}

TEST(GpuOffers, EveryRankTakesTheStrictestSettings) {
  std::vector<GpuOffer> gpus = {offer(1, 0, 1, 100), offer(2, 1, 1, 100), offer(3, 2, 1, 100)};
  gpus[0].maxChannels = 4;
  gpus[1].minChannels = 2;
  gpus[2].llMaxBytes = 4096;
  const ChannelAgreement agreed = agreeOnChannels(gpus, kRingOfThree, true);
  EXPECT_EQ(agreed.maxChannels, 4);
  EXPECT_EQ(agreed.minChannels, 2);
  EXPECT_EQ(agreed.llMaxBytes, 4096u);
}

// Where each rank's FIFOs live: `reaches` rows are what each rank's GPU
// reaches directly (all of them, unless a test says otherwise).
std::vector<std::uint8_t> everyoneReachesEveryone(std::size_t n) { return std::vector<std::uint8_t>(n * n, 1); }

TEST(FifoPlacements, RanksWhosePeersReachTheirGpuKeepFifosInGpuMemory) {
  // Two ranks on one GPU (two processes), a third on another GPU with peer access.
  const std::vector<GpuOffer> gpus = {offer(1, 0, 1, 100), offer(1, 0, 1, 200), offer(2, 1, 1, 300)};
  for (const FifoPlacement& placement : placeFifos(gpus, everyoneReachesEveryone(3))) {
    EXPECT_FALSE(placement.inHostMemory) << placement.why;
    EXPECT_TRUE(placement.why.empty());
  }
}

TEST(FifoPlacements, P2pDisabledOnAnyRankPutsEveryFifoAPeerOfTheHostWritesInHostMemory) {
  std::vector<GpuOffer> gpus = {offer(1, 0, 1, 100), offer(1, 0, 1, 100), offer(1, 0, 1, 100)};
  gpus[2].p2pDisabled = 1;
  const std::vector<FifoPlacement> placements = placeFifos(gpus, everyoneReachesEveryone(3));
  for (const FifoPlacement& placement : placements) {
    EXPECT_TRUE(placement.inHostMemory);
    EXPECT_NE(placement.why.find("P2P is disabled"), std::string::npos) << placement.why;
    EXPECT_NE(placement.why.find("on rank 2"), std::string::npos) << placement.why;
  }
}

TEST(FifoPlacements, AGpuThatCannotReachAnotherPutsOnlyThatOnesFifosInHostMemory) {
  // Rank 0's GPU cannot write rank 1's; rank 1's can write rank 0's; rank
  // 2 shares rank 0's GPU.
  const std::vector<GpuOffer> gpus = {offer(1, 0, 1, 100), offer(2, 1, 1, 100), offer(1, 0, 1, 100)};
  std::vector<std::uint8_t> reaches = everyoneReachesEveryone(3);
  reaches[0 * 3 + 1] = 0;
  const std::vector<FifoPlacement> placements = placeFifos(gpus, reaches);
  EXPECT_FALSE(placements[0].inHostMemory) << placements[0].why;
  EXPECT_TRUE(placements[1].inHostMemory);
  EXPECT_NE(placements[1].why.find("the GPU of rank 0 (" + gpuName(uuidOf(1)) + ") cannot reach " + gpuName(uuidOf(2))),
            std::string::npos)
      << placements[1].why;
  EXPECT_FALSE(placements[2].inHostMemory) << placements[2].why;
}

// Each rank asks CUDA only about the GPUs of its host other than its own,
// and its row, all-gathered, is what placeFifos() reads as "p reaches r".
TEST(FifoPlacements, ARanksRowAsksOnlyAboutOtherGpusOfItsHost) {
  // Rank 1 shares rank 0's GPU; rank 2 is on GPU 2 of the same host; rank 3
  // on another host.
  const std::vector<GpuOffer> gpus = {offer(1, 0, 1, 100), offer(1, 0, 1, 100), offer(2, 1, 1, 100),
                                      offer(3, 0, 2, 400)};
  std::vector<GpuUuid> asked;
  const std::vector<std::uint8_t> row = reachRow(gpus, 0, [&](const GpuUuid& uuid) {
    asked.push_back(uuid);
    return false;
  });
  EXPECT_EQ(row, (std::vector<std::uint8_t>{1, 1, 0, 1}));
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0], uuidOf(2));
  // All-gathered as row 0: rank 2's FIFOs move to host memory (rank 0
  // cannot reach them); rank 0's stay (rank 2 reaches them).
  std::vector<std::uint8_t> reaches = everyoneReachesEveryone(4);
  std::copy(row.begin(), row.end(), reaches.begin());
  const std::vector<FifoPlacement> placements = placeFifos(gpus, reaches);
  EXPECT_FALSE(placements[0].inHostMemory);
  EXPECT_FALSE(placements[1].inHostMemory);
  EXPECT_TRUE(placements[2].inHostMemory);
  EXPECT_FALSE(placements[3].inHostMemory);
}

// Peers on other hosts write through the network proxy's FIFOs, so neither
// P2P_DISABLE nor what their GPUs reach moves this rank's FIFOs, and a rank
// alone on its host keeps them in GPU memory.
TEST(FifoPlacements, PeersOnOtherHostsDoNotMoveARanksFifos) {
  std::vector<GpuOffer> gpus = {offer(1, 0, 1, 100), offer(2, 0, 2, 200), offer(3, 1, 2, 200)};
  gpus[1].p2pDisabled = 1;
  std::vector<std::uint8_t> reaches = everyoneReachesEveryone(3);
  reaches[1 * 3 + 0] = 0;
  const std::vector<FifoPlacement> placements = placeFifos(gpus, reaches);
  EXPECT_FALSE(placements[0].inHostMemory) << placements[0].why;
  EXPECT_TRUE(placements[1].inHostMemory);  // rank 2 shares its host
  EXPECT_TRUE(placements[2].inHostMemory);
}

}  // namespace
}  // namespace hora::device
