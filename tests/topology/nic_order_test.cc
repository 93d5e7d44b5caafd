// The order in which a rank prefers RDMA NICs (rdmaNicsNearest), on the
// Azure NDv4 fixture: 8 GPUs and 8 InfiniBand NICs, two of each per PCIe
// switch, on 4 NUMA nodes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "topology_test_support.h"

namespace hora::topology {
namespace {

const Device& nicNamed(const System& system, const std::string& name) {
  for (int nic : system.devicesOfKind(DeviceKind::Nic))
    if (system.devices()[static_cast<std::size_t>(nic)].name == name) return system.devices()[static_cast<std::size_t>(nic)];
  throw std::runtime_error("no NIC " + name);
}
int indexOf(const System& system, const std::string& name) {
  for (int nic : system.devicesOfKind(DeviceKind::Nic))
    if (system.devices()[static_cast<std::size_t>(nic)].name == name) return nic;
  return -1;
}

TEST(NicOrder, EachGpuPrefersItsOwnNicThenTheNearestOthers) {
  const System ndv4 = loadSystemFromFile(testing::fixture("nccl-topo/azure-ndv4-topo.xml"));
  std::set<std::string> firsts;
  for (int gpu : ndv4.devicesOfKind(DeviceKind::Gpu)) {
    const auto order = rdmaNicsNearest(ndv4, gpu, {});
    ASSERT_EQ(order.size(), 8u);
    EXPECT_EQ(order[0], ndv4.devices()[static_cast<std::size_t>(*ndv4.nearestNic(gpu))].name);
    firsts.insert(order[0]);
    // Then never a farther path before a nearer one.
    for (std::size_t k = 2; k < order.size(); ++k)
      EXPECT_LE(ndv4.path(gpu, indexOf(ndv4, order[k - 1])).cls, ndv4.path(gpu, indexOf(ndv4, order[k])).cls)
          << "GPU at index " << gpu << ", NICs " << order[k - 1] << " then " << order[k];
    // The second is the other NIC of the GPU's switch.
    EXPECT_EQ(ndv4.path(gpu, indexOf(ndv4, order[1])).cls, PathClass::Pix);
  }
  EXPECT_EQ(firsts.size(), 8u) << "the 8 GPUs should start from 8 different NICs";
}

TEST(NicOrder, WithoutAGpuTheNicsOfTheRanksNumaNodeComeFirst) {
  const System ndv4 = loadSystemFromFile(testing::fixture("nccl-topo/azure-ndv4-topo.xml"));
  const std::vector<int> node1 = ndv4.numaNodes()[1].cpus;
  const auto order = rdmaNicsNearest(ndv4, std::nullopt, node1);
  ASSERT_EQ(order.size(), 8u);
  int onNode1 = 0;
  for (const auto& name : order) onNode1 += nicNamed(ndv4, name).numaNode == 1;
  ASSERT_GT(onNode1, 0);
  for (int k = 0; k < onNode1; ++k) EXPECT_EQ(nicNamed(ndv4, order[k]).numaNode, 1) << order[k];
}

TEST(NicOrder, TheRailsAreTheNicsAsNearAsTheFirst) {
  const System ndv4 = loadSystemFromFile(testing::fixture("nccl-topo/azure-ndv4-topo.xml"));
  for (int gpu : ndv4.devicesOfKind(DeviceKind::Gpu)) {
    const auto order = rdmaNicsNearest(ndv4, gpu, {});
    const auto rails = rdmaRailsNearest(ndv4, gpu, {});
    // Its own NIC, then the other NIC behind the same PCIe switch.
    ASSERT_EQ(rails.size(), 2u) << "GPU at index " << gpu;
    EXPECT_EQ(rails[0], order[0]);
    EXPECT_EQ(rails[1], order[1]);
    EXPECT_EQ(ndv4.path(gpu, indexOf(ndv4, rails[1])).cls, PathClass::Pix);
  }
  // Without a GPU: the NICs of the rank's NUMA node.
  const std::vector<int> node1 = ndv4.numaNodes()[1].cpus;
  const auto rails = rdmaRailsNearest(ndv4, std::nullopt, node1);
  ASSERT_FALSE(rails.empty());
  for (const auto& name : rails) EXPECT_EQ(nicNamed(ndv4, name).numaNode, 1) << name;
  const auto order = rdmaNicsNearest(ndv4, std::nullopt, node1);
  EXPECT_LT(rails.size(), order.size());
}

TEST(NicOrder, AMachineWithoutRdmaNicsGivesNone) {
  const System ncv4 = loadSystemFromFile(testing::fixture("nccl-topo/azure-ncv4-topo.xml"));
  EXPECT_TRUE(rdmaNicsNearest(ncv4, std::nullopt, {0}).empty());
  EXPECT_TRUE(rdmaRailsNearest(ncv4, std::nullopt, {0}).empty());
}

}  // namespace
}  // namespace hora::topology
