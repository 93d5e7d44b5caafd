// Every fixture loads, and shows the devices, path classes, bandwidths and
// nearest NICs the real machine has.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "topology/system_builder.h"
#include "topology_test_support.h"

namespace hora::topology {
namespace {

using testing::deviceNamed;
using testing::fixture;
using testing::gpuIndex;
using testing::gpuPath;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string nearestNicBus(const System& system, int gpuNumber) {
  auto nic = system.nearestNic(gpuIndex(system, gpuNumber));
  return nic ? system.devices()[static_cast<std::size_t>(*nic)].busId : "none";
}

std::vector<std::string> busIds(const System& system, DeviceKind kind) {
  std::vector<std::string> ids;
  for (int d : system.devicesOfKind(kind)) ids.push_back(system.devices()[static_cast<std::size_t>(d)].busId);
  return ids;
}

TEST(FixturesTest, AzureNDv2HasEightGpusOnTwoSocketsAndOneInfinibandNic) {
  System sys = loadSystemFromFile(fixture("nccl-topo/azure-ndv2-topo.xml"));
  EXPECT_THAT(sys.source(), HasSubstr("NCCL topology XML"));
  EXPECT_EQ(sys.cpu().numaNodes, 2);
  ASSERT_EQ(sys.devicesOfKind(DeviceKind::Gpu).size(), 8u);
  ASSERT_EQ(sys.devicesOfKind(DeviceKind::Nic).size(), 1u);
  const Device& nic = sys.devices()[static_cast<std::size_t>(sys.devicesOfKind(DeviceKind::Nic)[0])];
  EXPECT_EQ(nic.busId, "0101:00:00.0");
  EXPECT_TRUE(nic.rdma);
  EXPECT_EQ(sys.devices()[gpuIndex(sys, 0)].name, "GPU0");
  EXPECT_EQ(sys.devices()[gpuIndex(sys, 0)].busId, "0001:00:00.0");
  EXPECT_EQ(sys.devices()[gpuIndex(sys, 5)].numaNode, 1);
  // No switch level: GPUs of one socket meet at the CPU.
  EXPECT_EQ(gpuPath(sys, 0, 3), PathClass::Phb);
  EXPECT_EQ(gpuPath(sys, 3, 4), PathClass::Sys);
  EXPECT_TRUE(sys.pciSwitches().empty());
  EXPECT_EQ(nearestNicBus(sys, 0), "0101:00:00.0");
  EXPECT_EQ(sys.path(gpuIndex(sys, 7), *sys.nearestNic(gpuIndex(sys, 7))).cls, PathClass::Sys);
}

TEST(FixturesTest, AzureNDv4PairsTwoGpusAndTwoNicsPerSwitch) {
  System sys = loadSystemFromFile(fixture("nccl-topo/azure-ndv4-topo.xml"));
  EXPECT_EQ(sys.cpu().numaNodes, 4);
  EXPECT_EQ(sys.cpu().hardwareThreads, 96);
  EXPECT_THAT(busIds(sys, DeviceKind::Gpu), ElementsAre("0001:00:00.0", "0002:00:00.0", "0003:00:00.0", "0004:00:00.0",
                                                        "000b:00:00.0", "000c:00:00.0", "000d:00:00.0", "000e:00:00.0"));
  EXPECT_EQ(sys.devicesOfKind(DeviceKind::Nic).size(), 8u);
  EXPECT_TRUE(sys.hasRdmaNic());
  ASSERT_EQ(sys.pciSwitches().size(), 4u);
  EXPECT_EQ(sys.pciSwitches()[0].busId, "ffff:ff:01.0");
  EXPECT_EQ(sys.pciSwitches()[0].devices.size(), 4u);  // 2 GPUs + 2 NICs

  EXPECT_EQ(gpuPath(sys, 0, 1), PathClass::Pix);
  EXPECT_EQ(gpuPath(sys, 1, 2), PathClass::Sys);
  EXPECT_EQ(gpuPath(sys, 6, 7), PathClass::Pix);
  // PCIe gen4 x16: 16 GT/s * 16 lanes * 128/130 / 8 bits.
  EXPECT_NEAR(sys.path(gpuIndex(sys, 0), gpuIndex(sys, 1)).bandwidthGBps, 31.5, 0.1);
  EXPECT_LT(sys.path(gpuIndex(sys, 0), gpuIndex(sys, 2)).bandwidthGBps, 31.5);
  // Each GPU gets its own NIC on its switch: the two GPUs of a switch share two NICs.
  EXPECT_EQ(nearestNicBus(sys, 0), "0101:00:00.0");
  EXPECT_EQ(nearestNicBus(sys, 1), "0102:00:00.0");
  EXPECT_EQ(nearestNicBus(sys, 2), "0103:00:00.0");
  EXPECT_EQ(nearestNicBus(sys, 3), "0104:00:00.0");
  EXPECT_EQ(nearestNicBus(sys, 6), "0107:00:00.0");
  EXPECT_EQ(sys.path(gpuIndex(sys, 0), *sys.nearestNic(gpuIndex(sys, 0))).cls, PathClass::Pix);
}

TEST(FixturesTest, AzureNDv4WithAssumedNvSwitchMakesEveryGpuPairNvlink) {
  LoadOptions options;
  options.assumeNvSwitch = true;
  System sys = loadSystemFromFile(fixture("nccl-topo/azure-ndv4-topo.xml"), options);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      if (i != j) {
        EXPECT_EQ(gpuPath(sys, i, j), PathClass::Nvl) << i << "-" << j;
      }
  EXPECT_EQ(sys.devicesOfKind(DeviceKind::NvSwitch).size(), 1u);
  EXPECT_DOUBLE_EQ(sys.path(gpuIndex(sys, 0), gpuIndex(sys, 5)).bandwidthGBps, nvswitchGBpsPerGpu(0));
  // The PCIe picture underneath is unchanged.
  EXPECT_EQ(sys.pciePathBetween(gpuIndex(sys, 0), gpuIndex(sys, 1)), PathClass::Pix);
  EXPECT_EQ(sys.pciePathBetween(gpuIndex(sys, 0), gpuIndex(sys, 2)), PathClass::Sys);
  // NICs are not on NVLink.
  EXPECT_EQ(sys.path(gpuIndex(sys, 0), *sys.nearestNic(gpuIndex(sys, 0))).cls, PathClass::Pix);
}

TEST(FixturesTest, AzureNDv5HasOneGpuAndOneNicPerSwitch) {
  System sys = loadSystemFromFile(fixture("nccl-topo/azure-ndv5-topo.xml"));
  EXPECT_EQ(sys.cpu().numaNodes, 2);
  EXPECT_EQ(sys.devicesOfKind(DeviceKind::Gpu).size(), 8u);
  EXPECT_EQ(sys.devicesOfKind(DeviceKind::Nic).size(), 8u);
  EXPECT_EQ(sys.pciSwitches().size(), 8u);
  EXPECT_EQ(gpuPath(sys, 0, 1), PathClass::Phb);  // two switches below one CPU
  EXPECT_EQ(gpuPath(sys, 3, 4), PathClass::Sys);
  // PCIe gen5 x16.
  int gpu3 = gpuIndex(sys, 3);
  EXPECT_EQ(nearestNicBus(sys, 3), "0104:00:00.0");  // GPU 0008:00:00.0 shares ffff:ff:04.0 with it
  EXPECT_NEAR(sys.path(gpu3, *sys.nearestNic(gpu3)).bandwidthGBps, 63.0, 0.1);
  for (int g = 0; g < 8; ++g) EXPECT_EQ(sys.path(gpuIndex(sys, g), *sys.nearestNic(gpuIndex(sys, g))).cls, PathClass::Pix);
}

TEST(FixturesTest, AzureNCv4IsFourPcieGpusOnFourNumaNodes) {
  System sys = loadSystemFromFile(fixture("nccl-topo/azure-ncv4-topo.xml"));
  EXPECT_EQ(sys.cpu().numaNodes, 4);
  ASSERT_EQ(sys.devicesOfKind(DeviceKind::Gpu).size(), 4u);
  for (int g : sys.devicesOfKind(DeviceKind::Gpu)) {
    EXPECT_EQ(sys.devices()[g].smVersion, 80);
    EXPECT_EQ(sys.devices()[g].nvlinkGBps, 0) << "an <nvlink> to the GPU itself is no link";
  }
  EXPECT_EQ(gpuPath(sys, 0, 1), PathClass::Sys);
  int eth0 = deviceNamed(sys, "eth0");
  ASSERT_GE(eth0, 0);
  EXPECT_FALSE(sys.devices()[eth0].rdma);
  EXPECT_DOUBLE_EQ(sys.devices()[eth0].speedGbps, 100);
  EXPECT_EQ(sys.devices()[eth0].numaNode, 0);
  EXPECT_EQ(sys.pathBetween(gpuIndex(sys, 0), eth0), PathClass::Phb);  // the NIC hangs off the CPU
  EXPECT_EQ(sys.pathBetween(gpuIndex(sys, 1), eth0), PathClass::Sys);
  EXPECT_FALSE(sys.hasRdmaNic());
}

TEST(FixturesTest, DGX2ReachesEveryGpuThroughNvSwitches) {
  System sys = loadSystemFromFile(fixture("hwloc/nvidiaDGX2.hwloc-2.12.2.xml"));
  EXPECT_THAT(sys.source(), HasSubstr("hwloc XML"));
  EXPECT_EQ(sys.cpu().packages, 2);
  EXPECT_EQ(sys.devicesOfKind(DeviceKind::Gpu).size(), 16u);
  EXPECT_EQ(sys.devicesOfKind(DeviceKind::NvSwitch).size(), 12u);
  EXPECT_TRUE(sys.devicesOfKind(DeviceKind::Nic).empty());
  EXPECT_EQ(sys.devices()[gpuIndex(sys, 0)].detail, "Tesla V100-SXM3-32GB-H");
  EXPECT_EQ(sys.devices()[gpuIndex(sys, 0)].busId, "0000:34:00.0");
  // Each GPU has 6 links of 25 GB/s into the switches.
  EXPECT_DOUBLE_EQ(sys.devices()[gpuIndex(sys, 0)].nvlinkGBps, 150);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      if (i != j) {
        EXPECT_EQ(gpuPath(sys, i, j), PathClass::Nvl) << i << "-" << j;
      }
  EXPECT_DOUBLE_EQ(sys.path(gpuIndex(sys, 0), gpuIndex(sys, 15)).bandwidthGBps, 150);
  // The PCIe tree: a PLX switch per GPU pair, another above two pairs, two
  // host bridges per socket.
  auto pcie = [&](int i, int j) { return sys.pciePathBetween(gpuIndex(sys, i), gpuIndex(sys, j)); };
  EXPECT_EQ(pcie(0, 1), PathClass::Pix);
  EXPECT_EQ(pcie(0, 2), PathClass::Pxb);
  EXPECT_EQ(pcie(0, 4), PathClass::Node);
  EXPECT_EQ(pcie(0, 8), PathClass::Sys);
  EXPECT_EQ(pcie(14, 15), PathClass::Pix);
  bool pairSwitch = false;
  for (const auto& sw : sys.pciSwitches())
    if (sw.busId == "0000:32:00.0") pairSwitch = sw.devices == std::vector<int>{gpuIndex(sys, 0), gpuIndex(sys, 1)};
  EXPECT_TRUE(pairSwitch);
}

TEST(FixturesTest, Power8PairsGpusWithNvlinkAndLinksThemToTheCpu) {
  System sys = loadSystemFromFile(fixture("hwloc/power8gpudistances.hwloc-2.9.0.xml"));
  EXPECT_EQ(sys.cpu().architecture, "ppc64le");
  ASSERT_EQ(sys.devicesOfKind(DeviceKind::Gpu).size(), 4u);
  EXPECT_EQ(gpuPath(sys, 0, 1), PathClass::Nvl);
  EXPECT_EQ(gpuPath(sys, 2, 3), PathClass::Nvl);
  EXPECT_EQ(gpuPath(sys, 1, 2), PathClass::Sys);
  EXPECT_EQ(gpuPath(sys, 0, 3), PathClass::Sys);
  EXPECT_DOUBLE_EQ(sys.path(gpuIndex(sys, 0), gpuIndex(sys, 1)).bandwidthGBps, 40);
  // 40 GB/s to the peer GPU and 40 GB/s to the CPU.
  EXPECT_DOUBLE_EQ(sys.devices()[gpuIndex(sys, 0)].nvlinkGBps, 80);
  // Without NVLink, the pair would cross two host bridges of one socket.
  EXPECT_EQ(sys.pciePathBetween(gpuIndex(sys, 0), gpuIndex(sys, 1)), PathClass::Node);
}

TEST(FixturesTest, TwoSocketHostFindsTheConnectXAndItsGpuNeighbour) {
  System sys = loadSystemFromFile(fixture("hwloc/32em64t-2n8c2t-pci-normalio.hwloc-2.9.0.xml"));
  EXPECT_EQ(sys.cpu().packages, 2);
  EXPECT_EQ(sys.cpu().cores, 16);
  EXPECT_EQ(sys.cpu().hardwareThreads, 32);
  // NVIDIA display/3D controllers only: the AMD and Matrox ones are no GPUs of ours.
  EXPECT_THAT(busIds(sys, DeviceKind::Gpu), ElementsAre("0000:03:00.0", "0000:83:00.0", "0000:84:00.0"));
  int mlx = deviceNamed(sys, "mlx5_0");
  ASSERT_GE(mlx, 0);
  EXPECT_TRUE(sys.devices()[mlx].rdma);
  EXPECT_EQ(sys.devices()[mlx].busId, "0000:04:00.0");
  EXPECT_EQ(sys.devices()[mlx].numaNode, 1);
  EXPECT_THAT(sys.devices()[mlx].detail, HasSubstr("ib0"));
  int eth0 = deviceNamed(sys, "eth0");
  ASSERT_GE(eth0, 0);
  EXPECT_FALSE(sys.devices()[eth0].rdma);

  EXPECT_EQ(sys.pathBetween(gpuIndex(sys, 2), mlx), PathClass::Pix);  // behind one root port
  EXPECT_EQ(sys.pathBetween(gpuIndex(sys, 1), mlx), PathClass::Phb);
  EXPECT_EQ(sys.pathBetween(gpuIndex(sys, 0), mlx), PathClass::Sys);
  EXPECT_EQ(gpuPath(sys, 1, 2), PathClass::Phb);
  EXPECT_EQ(sys.pathBetween(eth0, deviceNamed(sys, "eth1")), PathClass::Pix);
  // An RDMA NIC wins ties, so every GPU uses mlx5_0.
  for (int g = 0; g < 3; ++g) EXPECT_EQ(nearestNicBus(sys, g), "0000:04:00.0") << g;
}

// A rank that talks to other hosts through the bootstrap's interface keeps
// its threads near the NIC behind it: hwloc names an InfiniBand NIC after its
// verbs device (mlx5_0), and the interface (ib0) must still find it.
TEST(FixturesTest, NicsAreFoundByTheirNetworkInterface) {
  System sys = loadSystemFromFile(fixture("hwloc/32em64t-2n8c2t-pci-normalio.hwloc-2.9.0.xml"));
  const int mlx = deviceNamed(sys, "mlx5_0");
  ASSERT_GE(mlx, 0);
  EXPECT_EQ(sys.devices()[static_cast<std::size_t>(mlx)].netdev, "ib0");
  EXPECT_EQ(sys.findNicByInterface("ib0"), mlx);
  EXPECT_EQ(sys.findNicByInterface("eth0"), deviceNamed(sys, "eth0"));
  EXPECT_EQ(sys.findNicByInterface("eth1"), deviceNamed(sys, "eth1"));
  EXPECT_FALSE(sys.findNicByInterface("ib1").has_value());
  EXPECT_FALSE(sys.findNicByInterface("lo").has_value());
  // The NIC's NUMA node is what the rank's threads keep to.
  EXPECT_EQ(sys.devices()[static_cast<std::size_t>(*sys.findNicByInterface("ib0"))].numaNode, 1);
}

TEST(FixturesTest, FingerprintsTellShapesApartAndRepeat) {
  System a = loadSystemFromFile(fixture("nccl-topo/azure-ndv4-topo.xml"));
  System b = loadSystemFromFile(fixture("nccl-topo/azure-ndv4-topo.xml"));
  System c = loadSystemFromFile(fixture("nccl-topo/azure-ndv5-topo.xml"));
  LoadOptions nvswitch;
  nvswitch.assumeNvSwitch = true;
  System d = loadSystemFromFile(fixture("nccl-topo/azure-ndv4-topo.xml"), nvswitch);
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  EXPECT_NE(a.fingerprint(), c.fingerprint());
  EXPECT_NE(a.fingerprint(), d.fingerprint());
}

TEST(FixturesTest, PathClassNamesRoundTrip) {
  for (PathClass cls : {PathClass::Loc, PathClass::Nvl, PathClass::Pix, PathClass::Pxb, PathClass::Phb,
                        PathClass::Node, PathClass::Sys, PathClass::Net})
    EXPECT_EQ(parsePathClass(pathClassName(cls)), cls);
  EXPECT_EQ(parsePathClass("pxb"), PathClass::Pxb);
  EXPECT_FALSE(parsePathClass("PCI").has_value());
  EXPECT_LT(PathClass::Nvl, PathClass::Pix);
  EXPECT_LT(PathClass::Node, PathClass::Sys);
}

}  // namespace
}  // namespace hora::topology
