// Where a rank's own threads run: CPU masks as NCCL's topology files write
// them, the CPUs near a device, and the rule that a mask is only narrowed.
#include "topology/cpu_affinity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/error.h"
#include "topology_test_support.h"

namespace hora::topology {
namespace {

using ::testing::ElementsAre;

std::vector<int> range(int first, int last) {
  std::vector<int> cpus;
  for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  return cpus;
}

TEST(CpuAffinityTest, ParsesMasksOfThirtyTwoBitWordsMostSignificantFirst) {
  EXPECT_EQ(parseCpuMask("00ffffff"), range(0, 23));
  EXPECT_EQ(parseCpuMask("00000000,0000ffff,ff000000"), range(24, 47));
  EXPECT_EQ(parseCpuMask("000000FF,ffff0000,00000000"), range(48, 71));
  EXPECT_THAT(parseCpuMask("80000000,00000001"), ElementsAre(0, 63));
  EXPECT_THAT(parseCpuMask("1,0"), ElementsAre(32));
  EXPECT_TRUE(parseCpuMask("0").empty());
  for (const char* bad : {"", "xyz", "123456789", "ff,,ff", "ff,", " ff"})
    EXPECT_THROW(parseCpuMask(bad), Error) << "'" << bad << "'";
}

TEST(CpuAffinityTest, FormatsRuns) {
  EXPECT_EQ(formatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(formatCpuList({5}), "5");
  EXPECT_EQ(formatCpuList({}), "");
}

TEST(CpuAffinityTest, NarrowsToTheDevicesCpusOnly) {
  // Whole machine allowed: keep to the device's node.
  EXPECT_EQ(affinityNear(range(0, 95), range(24, 47)), range(24, 47));
  // Partly overlapping: the overlap.
  EXPECT_EQ(affinityNear(range(20, 30), range(24, 47)), range(24, 30));
  // Already within the node (the user's narrower choice): left alone.
  EXPECT_EQ(affinityNear(range(30, 31), range(24, 47)), std::nullopt);
  EXPECT_EQ(affinityNear(range(24, 47), range(24, 47)), std::nullopt);
  // Nothing in common: never moved out of what the user chose.
  EXPECT_EQ(affinityNear(range(0, 3), range(24, 47)), std::nullopt);
  // Device CPUs unknown.
  EXPECT_EQ(affinityNear(range(0, 95), {}), std::nullopt);
}

TEST(CpuAffinityTest, ThisThreadHasCpus) { EXPECT_FALSE(currentCpus().empty()); }

TEST(CpuAffinityTest, FixturesGiveTheCpusNearEachDevice) {
  const System ndv4 = loadSystemFromFile(testing::fixture("nccl-topo/azure-ndv4-topo.xml"));
  ASSERT_EQ(ndv4.numaNodes().size(), 4u);
  EXPECT_EQ(ndv4.numaNodes()[1].osIndex, 1);
  EXPECT_EQ(ndv4.numaNodes()[1].cpus, range(24, 47));
  for (int gpu : ndv4.devicesOfKind(DeviceKind::Gpu)) {
    const int node = ndv4.devices()[static_cast<std::size_t>(gpu)].numaNode;
    EXPECT_EQ(ndv4.cpusNear(gpu), range(node * 24, node * 24 + 23)) << "GPU at index " << gpu;
  }
  // hwloc XML: two NUMA nodes of 8 cores with 2 hardware threads each.
  const System hwloc = loadSystemFromFile(testing::fixture("hwloc/32em64t-2n8c2t-pci-normalio.hwloc-2.9.0.xml"));
  ASSERT_EQ(hwloc.numaNodes().size(), 2u);
  EXPECT_EQ(hwloc.numaNodes()[0].cpus.size() + hwloc.numaNodes()[1].cpus.size(), 32u);
}

}  // namespace
}  // namespace hora::topology
