// Ring order: the ring an expert would draw on each fixture, and the rules
// for hosts, shared GPUs, ranks without GPU and consistency between ranks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>

#include "hora/communicator.h"
#include "synthetic_machines.h"
#include "topology_test_support.h"

namespace hora::topology {
namespace {

using testing::fixture;
using testing::place;
using testing::rankPerGpu;
using testing::readText;
using testing::TempFile;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

System load(const std::string& name, bool assumeNvSwitch = false) {
  LoadOptions options;
  options.assumeNvSwitch = assumeNvSwitch;
  return loadSystemFromFile(fixture(name), options);
}

// Path classes of the ring's edges, closing edge included.
std::vector<PathClass> ringEdges(const System& system, const std::vector<RankPlacement>& ranks,
                                 const std::vector<int>& ring) {
  std::vector<PathClass> edges;
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const auto& a = ranks[static_cast<std::size_t>(ring[i])];
    const auto& b = ranks[static_cast<std::size_t>(ring[(i + 1) % ring.size()])];
    edges.push_back(system.pathBetween(*system.findGpu(a.gpuBusId), *system.findGpu(b.gpuBusId)));
  }
  return edges;
}

long countOf(const std::vector<PathClass>& edges, PathClass cls) { return std::count(edges.begin(), edges.end(), cls); }

int hostCrossings(const std::vector<RankPlacement>& ranks, const std::vector<int>& ring) {
  int crossings = 0;
  for (std::size_t i = 0; i < ring.size(); ++i)
    crossings += ranks[static_cast<std::size_t>(ring[i])].hostHash !=
                 ranks[static_cast<std::size_t>(ring[(i + 1) % ring.size()])].hostHash;
  return crossings;
}

// The fixture with every GPU's <pci .../> given NVLink children.
std::string withGpuChildren(std::string text, const std::string& gpuTail,
                            const std::vector<std::string>& childrenPerGpu) {
  std::size_t at = 0;
  for (const auto& children : childrenPerGpu) {
    at = text.find(gpuTail, at);
    EXPECT_NE(at, std::string::npos);
    std::string replacement = gpuTail.substr(0, gpuTail.size() - 2) + ">" + children + "</pci>";
    text.replace(at, gpuTail.size(), replacement);
    at += replacement.size();
  }
  return text;
}

TEST(RingOrderTest, AzureNDv4KeepsSwitchPairsTogether) {
  System sys = load("nccl-topo/azure-ndv4-topo.xml");
  auto ranks = rankPerGpu(sys);
  auto ring = ringOrder(ranks, &sys);
  EXPECT_THAT(ring, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  auto edges = ringEdges(sys, ranks, ring);
  EXPECT_EQ(countOf(edges, PathClass::Pix), 4);  // every switch pair adjacent
  EXPECT_EQ(countOf(edges, PathClass::Sys), 4);  // one hop per NUMA node: the minimum
}

TEST(RingOrderTest, AzureNDv4FollowsLocalityNotRankOrder) {
  System sys = load("nccl-topo/azure-ndv4-topo.xml");
  // Rank r drives GPU 0, 2, 4, 6, 1, 3, 5, 7: switch partners are ranks (0,4), (1,5), (2,6), (3,7).
  auto ranks = place(sys, {0, 2, 4, 6, 1, 3, 5, 7});
  EXPECT_THAT(ringOrder(ranks, &sys), ElementsAre(0, 4, 1, 5, 2, 6, 3, 7));
}

TEST(RingOrderTest, AzureNDv4WithNvSwitchIsAllNvlinkAndStillPairsBySwitch) {
  System sys = load("nccl-topo/azure-ndv4-topo.xml", /*assumeNvSwitch=*/true);
  auto ranks = rankPerGpu(sys);
  auto ring = ringOrder(ranks, &sys);
  EXPECT_THAT(ring, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_EQ(countOf(ringEdges(sys, ranks, ring), PathClass::Nvl), 8);
  auto shuffled = place(sys, {0, 2, 4, 6, 1, 3, 5, 7});
  EXPECT_THAT(ringOrder(shuffled, &sys), ElementsAre(0, 4, 1, 5, 2, 6, 3, 7));
}

TEST(RingOrderTest, AzureNDv4WithNvSwitchDescribedInTheFile) {
  // What NCCL writes for a GPU on an NVSwitch board: 12 links to the fabric.
  const std::string gpu = R"(<gpu dev="0" sm="80"><nvlink target="fffffff:ffff:ff" count="12" tclass="0x068000"/></gpu>)";
  TempFile file(withGpuChildren(readText(fixture("nccl-topo/azure-ndv4-topo.xml")),
                                R"(class="0x030200" link_speed="16 GT/s" link_width="16"/>)",
                                std::vector<std::string>(8, gpu)));
  System sys = loadSystemFromFile(file.path());
  auto ranks = rankPerGpu(sys);
  auto ring = ringOrder(ranks, &sys);
  EXPECT_THAT(ring, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_EQ(countOf(ringEdges(sys, ranks, ring), PathClass::Nvl), 8);
  EXPECT_DOUBLE_EQ(sys.path(testing::gpuIndex(sys, 0), testing::gpuIndex(sys, 7)).bandwidthGBps, 12 * 25);
}

TEST(RingOrderTest, AzureNDv5CrossesTheSocketsTwice) {
  System sys = load("nccl-topo/azure-ndv5-topo.xml");
  auto ranks = rankPerGpu(sys);
  auto ring = ringOrder(ranks, &sys);
  EXPECT_THAT(ring, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_EQ(countOf(ringEdges(sys, ranks, ring), PathClass::Sys), 2);
}

TEST(RingOrderTest, AzureNCv4VisitsEachNumaNodeOnce) {
  System sys = load("nccl-topo/azure-ncv4-topo.xml");
  EXPECT_THAT(ringOrder(rankPerGpu(sys), &sys), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(ringOrder(place(sys, {3, 1, 0, 2}), &sys), ElementsAre(0, 1, 2, 3));  // all SYS: rank order
}

TEST(RingOrderTest, AzureNDv2WithoutNvlinkKeepsSocketsTogether) {
  System sys = load("nccl-topo/azure-ndv2-topo.xml");
  auto ranks = place(sys, {0, 4, 1, 5, 2, 6, 3, 7});  // ranks alternate sockets
  auto ring = ringOrder(ranks, &sys);
  EXPECT_THAT(ring, ElementsAre(0, 2, 4, 6, 1, 3, 5, 7));
  EXPECT_EQ(countOf(ringEdges(sys, ranks, ring), PathClass::Sys), 2);
}

TEST(RingOrderTest, AzureNDv2HybridCubeMeshRingUsesOnlyNvlink) {
  // The ND v2 / DGX-1 hybrid cube mesh: GPUs 0-3 and 4-7 fully connected, plus i <-> i+4.
  std::vector<std::string> buses = {"0001:00:00.0", "0002:00:00.0", "0003:00:00.0", "0004:00:00.0",
                                    "0005:00:00.0", "0006:00:00.0", "0007:00:00.0", "0008:00:00.0"};
  std::vector<std::string> children;
  for (int g = 0; g < 8; ++g) {
    std::string links;
    for (int peer = 0; peer < 8; ++peer) {
      bool sameQuad = peer != g && peer / 4 == g / 4;
      if (sameQuad || peer == (g + 4) % 8)
        links += "<nvlink target=\"" + buses[static_cast<std::size_t>(peer)] + "\" count=\"1\" tclass=\"0x030200\"/>";
    }
    children.push_back("<gpu dev=\"" + std::to_string(g) + "\" sm=\"70\">" + links + "</gpu>");
  }
  TempFile file(withGpuChildren(readText(fixture("nccl-topo/azure-ndv2-topo.xml")),
                                R"(class="0x030200" link_speed="16 GT/s" link_width="16"/>)", children));
  System sys = loadSystemFromFile(file.path());
  EXPECT_EQ(testing::gpuPath(sys, 0, 4), PathClass::Nvl);
  EXPECT_EQ(testing::gpuPath(sys, 0, 5), PathClass::Sys);
  EXPECT_EQ(testing::gpuPath(sys, 3, 4), PathClass::Sys);
  auto ranks = rankPerGpu(sys);
  auto ring = ringOrder(ranks, &sys);
  // Every step on NVLink: leave the first quad through 3 -> 7, come back through 4 -> 0.
  EXPECT_THAT(ring, ElementsAre(0, 1, 2, 3, 7, 5, 6, 4));
  EXPECT_EQ(countOf(ringEdges(sys, ranks, ring), PathClass::Nvl), 8);
}

// A DGX-1's hybrid cube mesh of NVLinks in the ND v2 fixture: GPUs 0-3 and
// 4-7 each fully joined, and GPU g to g+4; the pairs in `doubleLinks` by two
// links (V100), the others by one.
std::string dgx1WithDoubleLinks(const std::set<std::pair<int, int>>& doubleLinks) {
  std::vector<std::string> buses = {"0001:00:00.0", "0002:00:00.0", "0003:00:00.0", "0004:00:00.0",
                                    "0005:00:00.0", "0006:00:00.0", "0007:00:00.0", "0008:00:00.0"};
  auto linksBetween = [&](int a, int b) {
    if (a == b) return 0;
    if (doubleLinks.count({std::min(a, b), std::max(a, b)})) return 2;
    return a / 4 == b / 4 || (a + 4) % 8 == b ? 1 : 0;
  };
  std::vector<std::string> children;
  for (int g = 0; g < 8; ++g) {
    std::string links;
    for (int peer = 0; peer < 8; ++peer)
      if (int count = linksBetween(g, peer); count > 0)
        links += "<nvlink target=\"" + buses[static_cast<std::size_t>(peer)] + "\" count=\"" + std::to_string(count) +
                 "\" tclass=\"0x030200\"/>";
    children.push_back("<gpu dev=\"" + std::to_string(g) + "\" sm=\"70\">" + links + "</gpu>");
  }
  return withGpuChildren(readText(fixture("nccl-topo/azure-ndv2-topo.xml")),
                         R"(class="0x030200" link_speed="16 GT/s" link_width="16"/>)", children);
}

// The pairs of the DGX-1 with V100s joined by two links.
const std::set<std::pair<int, int>> kDgx1VDoubleLinks = {{0, 3}, {0, 4}, {1, 2}, {1, 5},
                                                        {2, 3}, {4, 7}, {5, 6}, {6, 7}};

// The DGX-1 with V100s (Azure ND v2): the same hybrid cube mesh, but the
// pairs 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6 and 6-7 are joined by two links
// and the others by one. A ring runs at the pace of its slowest hop, so it
// keeps to the two-link pairs, which form one cycle through all eight GPUs.
TEST(RingOrderTest, DGX1VRingKeepsToTheDoubleLinks) {
  TempFile file(dgx1WithDoubleLinks(kDgx1VDoubleLinks));
  System sys = loadSystemFromFile(file.path());
  auto ranks = rankPerGpu(sys);
  auto ring = ringOrder(ranks, &sys);
  // Of the two directions, the one whose hop across the sockets closes the ring.
  EXPECT_THAT(ring, ElementsAre(0, 3, 2, 1, 5, 6, 7, 4));
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const int a = testing::gpuIndex(sys, ring[i]), b = testing::gpuIndex(sys, ring[(i + 1) % ring.size()]);
    EXPECT_EQ(sys.pathBetween(a, b), PathClass::Nvl) << ring[i];
    EXPECT_DOUBLE_EQ(sys.path(a, b).bandwidthGBps, 2 * 25) << ring[i];
  }
  // Ranks numbered otherwise get the same cycle of GPUs.
  auto shuffled = place(sys, {0, 1, 2, 3, 7, 6, 5, 4});  // rank r on GPU 0 1 2 3 7 6 5 4
  EXPECT_THAT(ringOrder(shuffled, &sys), ElementsAre(0, 3, 2, 1, 6, 5, 4, 7));
}

// Ranks use their System for ring order only where every rank's has the
// same fingerprint, so it must cover what the order depends on: two hosts
// whose NVLinks differ only in their count (one double link degraded to
// one) order their rings differently, and must not pass for one shape.
TEST(RingOrderTest, FingerprintsTellNvLinkBandwidthsApart) {
  TempFile healthy(dgx1WithDoubleLinks(kDgx1VDoubleLinks));
  auto degradedLinks = kDgx1VDoubleLinks;
  degradedLinks.erase({1, 2});
  TempFile degraded(dgx1WithDoubleLinks(degradedLinks));
  System a = loadSystemFromFile(healthy.path());
  System b = loadSystemFromFile(degraded.path());
  ASSERT_NE(ringOrder(rankPerGpu(a), &a), ringOrder(rankPerGpu(b), &b));
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  EXPECT_EQ(a.fingerprint(), loadSystemFromFile(healthy.path()).fingerprint());
  // Ranks on two hosts, one of each, agree on a ring that uses neither System.
  auto onA = place(a, {0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 1, 1, 2, 2, 2, 2});
  auto onB = place(b, {0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 1, 1, 2, 2, 2, 2});
  for (std::size_t r = 4; r < 8; ++r) onA[r].topologyFingerprint = onB[r].topologyFingerprint;
  EXPECT_EQ(ringOrder(onA, &a), ringOrder(onA, nullptr));
}

TEST(RingOrderTest, DGX2IsAllNvlinkAndFollowsThePcieTree) {
  System sys = load("hwloc/nvidiaDGX2.hwloc-2.12.2.xml");
  auto ranks = rankPerGpu(sys);
  std::vector<int> expected(16);
  for (int r = 0; r < 16; ++r) expected[static_cast<std::size_t>(r)] = r;
  auto ring = ringOrder(ranks, &sys);
  EXPECT_THAT(ring, ElementsAreArray(expected));
  EXPECT_EQ(countOf(ringEdges(sys, ranks, ring), PathClass::Nvl), 16);

  // Ranks alternating sockets: each socket's GPUs still stay together, in PCIe order.
  std::vector<int> alternating;
  for (int r = 0; r < 16; ++r) alternating.push_back((r % 2) * 8 + r / 2);
  EXPECT_THAT(ringOrder(place(sys, alternating), &sys),
              ElementsAre(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
}

TEST(RingOrderTest, Power8KeepsNvlinkPairsAdjacent) {
  System sys = load("hwloc/power8gpudistances.hwloc-2.9.0.xml");
  EXPECT_THAT(ringOrder(rankPerGpu(sys), &sys), ElementsAre(0, 1, 2, 3));
  // Rank r drives GPU 0, 2, 1, 3: the NVLink pairs are ranks (0,2) and (1,3).
  auto ranks = place(sys, {0, 2, 1, 3});
  auto ring = ringOrder(ranks, &sys);
  EXPECT_THAT(ring, ElementsAre(0, 2, 1, 3));
  EXPECT_EQ(countOf(ringEdges(sys, ranks, ring), PathClass::Nvl), 2);
}

TEST(RingOrderTest, MixedMachineMinimisesTheWorstHopsFirst) {
  TempFile file(testing::kMixedMachine);
  System sys = loadSystemFromFile(file.path());
  // GPUs: 0-1 PIX, 2 PXB to them, 3 PHB, 4 on the other socket.
  auto ranks = place(sys, {2, 4, 0, 3, 1});
  auto ring = ringOrder(ranks, &sys);
  // GPUs 2 0 1 3 4: PXB, PIX, PHB, SYS, and SYS back to the start.
  EXPECT_THAT(ring, ElementsAre(0, 2, 4, 3, 1));
  auto edges = ringEdges(sys, ranks, ring);
  EXPECT_EQ(countOf(edges, PathClass::Sys), 2);
  EXPECT_EQ(countOf(edges, PathClass::Phb), 1);
  EXPECT_EQ(countOf(edges, PathClass::Pxb), 1);
  EXPECT_EQ(countOf(edges, PathClass::Pix), 1);
}

TEST(RingOrderTest, WithoutASystemGpusGoInBusOrder) {
  TempFile file(testing::kCrossedSwitches);
  System sys = loadSystemFromFile(file.path());
  auto ranks = rankPerGpu(sys);  // bus order 11, 12, 13, 14; switches {11,13} {12,14}
  EXPECT_THAT(ringOrder(ranks, &sys), ElementsAre(0, 2, 1, 3));
  EXPECT_THAT(ringOrder(ranks, nullptr), ElementsAre(0, 1, 2, 3));
}

TEST(RingOrderTest, InterleavedHostsCrossEachBoundaryOnce) {
  TempFile file(testing::kCrossedSwitches);
  System sys = loadSystemFromFile(file.path());
  // 2 hosts x 4 ranks given in interleaved rank order: host 10 has the even ranks.
  std::vector<std::uint64_t> hosts = {10, 20, 10, 20, 10, 20, 10, 20};
  auto ranks = place(sys, {0, 0, 1, 1, 2, 2, 3, 3}, hosts);
  auto ring = ringOrder(ranks, &sys);
  EXPECT_THAT(ring, ElementsAre(0, 4, 2, 6, 1, 5, 3, 7));
  EXPECT_EQ(hostCrossings(ranks, ring), 2);
}

TEST(RingOrderTest, ManyHostsEachEnteredOnce) {
  System sys = load("nccl-topo/azure-ndv4-topo.xml", true);
  // 4 hosts x 8 ranks, rank r on host r % 4, its GPU (r / 4).
  std::vector<int> gpus;
  std::vector<std::uint64_t> hosts;
  for (int r = 0; r < 32; ++r) {
    gpus.push_back(r / 4);
    hosts.push_back(static_cast<std::uint64_t>(100 + r % 4));
  }
  auto ranks = place(sys, gpus, hosts);
  auto ring = ringOrder(ranks, &sys);
  EXPECT_EQ(hostCrossings(ranks, ring), 4);
  EXPECT_THAT(std::vector<int>(ring.begin(), ring.begin() + 8), ElementsAre(0, 4, 8, 12, 16, 20, 24, 28));
  // Hosts follow their lowest rank: 0, 1, 2, 3.
  EXPECT_EQ(ring[8], 1);
  EXPECT_EQ(ring[16], 2);
  EXPECT_EQ(ring[24], 3);
}

TEST(RingOrderTest, HostsWhoseTopologiesDifferFallBackToBusOrder) {
  TempFile file(testing::kCrossedSwitches);
  System sys = loadSystemFromFile(file.path());
  std::vector<std::uint64_t> hosts = {10, 20, 10, 20, 10, 20, 10, 20};
  auto ranks = place(sys, {0, 0, 1, 1, 2, 2, 3, 3}, hosts);
  ranks[1].topologyFingerprint ^= 1;  // host 20 is of another shape
  auto ring = ringOrder(ranks, &sys);
  EXPECT_THAT(ring, ElementsAre(0, 2, 4, 6, 1, 3, 5, 7));
  EXPECT_EQ(hostCrossings(ranks, ring), 2);

  // No fingerprints at all: trusted on one host only.
  for (auto& r : ranks) r.topologyFingerprint = 0;
  EXPECT_THAT(ringOrder(ranks, &sys), ElementsAre(0, 2, 4, 6, 1, 3, 5, 7));
  auto oneHost = place(sys, {0, 1, 2, 3});
  for (auto& r : oneHost) r.topologyFingerprint = 0;
  EXPECT_THAT(ringOrder(oneHost, &sys), ElementsAre(0, 2, 1, 3));
}

TEST(RingOrderTest, RanksSharingAGpuStandTogether) {
  System sys = load("nccl-topo/azure-ndv4-topo.xml");
  std::vector<int> gpus;
  for (int r = 0; r < 16; ++r) gpus.push_back(r % 8);
  EXPECT_THAT(ringOrder(place(sys, gpus), &sys),
              ElementsAre(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15));
}

TEST(RingOrderTest, RanksWithoutGpuFollowByRank) {
  System sys = load("nccl-topo/azure-ndv4-topo.xml");
  auto ranks = place(sys, {-1, 1, -1, 0, -1});
  // GPU ranks first (1, 3), then 0, 2, 4 by rank; the ring starts at rank 0.
  EXPECT_THAT(ringOrder(ranks, &sys), ElementsAre(0, 2, 4, 1, 3));
  std::vector<std::uint64_t> hosts = {1, 2, 1, 2, 1, 2};
  auto cpuOnly = place(sys, {-1, -1, -1, -1, -1, -1}, hosts);
  EXPECT_THAT(ringOrder(cpuOnly, nullptr), ElementsAre(0, 2, 4, 1, 3, 5));
}

TEST(RingOrderTest, BeyondSixteenGpusTheGreedyRingStillKeepsGroupsTogether) {
  // 2 sockets x 5 switches x 2 GPUs: more GPUs than the exact search takes.
  std::string xml = "<system version=\"1\">\n";
  for (int socket = 0; socket < 2; ++socket) {
    xml += "<cpu numaid=\"" + std::to_string(socket) + "\">\n";
    for (int sw = 0; sw < 5; ++sw) {
      char bus[32];
      std::snprintf(bus, sizeof bus, "%04x:00:00.0", 0xf000 + socket * 16 + sw);
      xml += std::string("<pci busid=\"") + bus + "\" class=\"0x060400\">";
      for (int g = 0; g < 2; ++g) {
        std::snprintf(bus, sizeof bus, "%04x:00:00.0", 1 + socket * 16 + sw * 2 + g);
        xml += std::string("<pci busid=\"") + bus + "\" class=\"0x030200\"/>";
      }
      xml += "</pci>\n";
    }
    xml += "</cpu>\n";
  }
  xml += "</system>\n";
  TempFile file(xml);
  System sys = loadSystemFromFile(file.path());
  ASSERT_EQ(sys.devicesOfKind(DeviceKind::Gpu).size(), 20u);
  // Ranks spread over the GPUs out of locality order.
  std::vector<int> gpus;
  for (int r = 0; r < 20; ++r) gpus.push_back((r * 7) % 20);
  auto ranks = place(sys, gpus);
  auto ring = ringOrder(ranks, &sys);
  std::vector<int> sorted = ring;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> all(20);
  for (int r = 0; r < 20; ++r) all[static_cast<std::size_t>(r)] = r;
  EXPECT_EQ(sorted, all);
  auto edges = ringEdges(sys, ranks, ring);
  EXPECT_EQ(countOf(edges, PathClass::Sys), 2);   // each socket once
  EXPECT_EQ(countOf(edges, PathClass::Pix), 10);  // every switch pair adjacent
}

TEST(RingOrderTest, SameRingWhateverOrderPlacementsArriveIn) {
  System sys = load("hwloc/nvidiaDGX2.hwloc-2.12.2.xml");
  std::vector<int> gpus;
  std::vector<std::uint64_t> hosts;
  for (int r = 0; r < 32; ++r) {
    gpus.push_back((r * 7) % 16);
    hosts.push_back(r < 16 ? 5 : 3);
  }
  auto ranks = place(sys, gpus, hosts);
  auto expected = ringOrder(ranks, &sys);
  std::mt19937 random(1234);
  for (int trial = 0; trial < 3; ++trial) {
    std::shuffle(ranks.begin(), ranks.end(), random);
    EXPECT_EQ(ringOrder(ranks, &sys), expected);
  }
  EXPECT_EQ(expected.size(), 32u);
}

TEST(RingOrderTest, EdgeCases) {
  EXPECT_TRUE(ringOrder({}, nullptr).empty());
  System sys = load("nccl-topo/azure-ndv4-topo.xml");
  EXPECT_THAT(ringOrder(place(sys, {3}), &sys), ElementsAre(0));
  auto twice = place(sys, {0, 1});
  twice[1].rank = 0;
  try {
    ringOrder(twice, &sys);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("rank 0 is placed twice"));
  }
}

}  // namespace
}  // namespace hora::topology
