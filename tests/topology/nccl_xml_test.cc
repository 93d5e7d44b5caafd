// How NCCL's topology XML is read where NCCL gives it a meaning: the far
// end of an <nvlink> by its tclass, and the names of NIC ports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "topology_test_support.h"

namespace hora::topology {
namespace {

using testing::deviceNamed;
using testing::gpuIndex;
using testing::gpuPath;
using testing::TempFile;
using ::testing::HasSubstr;

// A GPU <pci> whose <gpu> holds one <nvlink> with these attributes.
std::string gpuLinkedTo(const std::string& busId, int dev, const std::string& nvlinkAttributes) {
  return "    <pci busid=\"" + busId + "\" class=\"0x030200\" vendor=\"0x10de\" link_speed=\"8 GT/s\" link_width=\"16\">"
         "<gpu dev=\"" + std::to_string(dev) + "\" sm=\"70\"><nvlink " + nvlinkAttributes + "/></gpu></pci>\n";
}

// A two-socket IBM POWER9 host: each GPU's NVLinks go to its own CPU
// (tclass 0x068001), none to another GPU.
std::string power9WithNvLinksToTheCpus() {
  return "<system version=\"1\">\n"
         "  <cpu numaid=\"0\" affinity=\"0000000f\" arch=\"ppc64\" vendor=\"IBM\">\n" +
         gpuLinkedTo("0004:04:00.0", 0, "target=\"0004:00:00.0\" count=\"3\" tclass=\"0x068001\"") +
         gpuLinkedTo("0004:05:00.0", 1, "target=\"0004:00:00.1\" count=\"3\" tclass=\"0x068001\"") +
         "  </cpu>\n  <cpu numaid=\"8\" affinity=\"000000f0\" arch=\"ppc64\" vendor=\"IBM\">\n" +
         gpuLinkedTo("0035:03:00.0", 2, "target=\"0035:00:00.0\" count=\"3\" tclass=\"0x068001\"") +
         gpuLinkedTo("0035:04:00.0", 3, "target=\"0035:00:00.1\" count=\"3\" tclass=\"0x068001\"") +
         "  </cpu>\n</system>\n";
}

// 0x068001 is NCCL's class for a CPU at the end of an NVLink; only 0x068000
// is an NVSwitch. Read as a switch, every GPU pair would be NVLink.
TEST(NcclXmlTest, NvLinksToTheCpuJoinNoGpus) {
  TempFile file(power9WithNvLinksToTheCpus());
  System sys = loadSystemFromFile(file.path());
  EXPECT_TRUE(sys.devicesOfKind(DeviceKind::NvSwitch).empty());
  EXPECT_EQ(gpuPath(sys, 0, 2), PathClass::Sys);  // across the sockets
  EXPECT_EQ(gpuPath(sys, 0, 1), PathClass::Phb);  // through their CPU's PCIe
  EXPECT_DOUBLE_EQ(sys.devices()[gpuIndex(sys, 0)].nvlinkGBps, 3 * 25);  // the links still count

  auto ranks = testing::rankPerGpu(sys);
  TransportChoice apart = chooseTransport(ranks[0], ranks[2], sys, TransportPolicy{});
  EXPECT_EQ(apart.kind, TransportKind::Shm);
  EXPECT_THAT(apart.reason, HasSubstr("SYS"));
}

// NCCL takes an <nvlink> without tclass, or with a class that is neither a
// GPU's nor 0x068001, for a link to an NVSwitch.
TEST(NcclXmlTest, NvLinksOfNoOrOtherClassGoToTheNvSwitchFabric) {
  TempFile file("<system version=\"1\">\n  <cpu numaid=\"0\" affinity=\"0000000f\">\n" +
                gpuLinkedTo("0000:01:00.0", 0, "target=\"0000:a0:00.0\" count=\"6\"") +
                gpuLinkedTo("0000:02:00.0", 1, "target=\"0000:a1:00.0\" count=\"6\" tclass=\"0x068002\"") +
                "  </cpu>\n  <cpu numaid=\"1\" affinity=\"000000f0\">\n" +
                gpuLinkedTo("0000:81:00.0", 2, "target=\"0000:a2:00.0\" count=\"6\" tclass=\"0x068000\"") +
                "  </cpu>\n</system>\n");
  System sys = loadSystemFromFile(file.path());
  EXPECT_EQ(sys.devicesOfKind(DeviceKind::NvSwitch).size(), 1u);
  EXPECT_EQ(gpuPath(sys, 0, 1), PathClass::Nvl);
  EXPECT_EQ(gpuPath(sys, 0, 2), PathClass::Nvl);
  EXPECT_DOUBLE_EQ(sys.path(gpuIndex(sys, 0), gpuIndex(sys, 2)).bandwidthGBps, 6 * 25);
}

// A port named after its verbs device says RDMA once, in its flag; a port
// named after its interface is found by that interface.
TEST(NcclXmlTest, NicPortsKeepTheirNamesAndInterfaces) {
  TempFile file(
      "<system version=\"1\">\n  <cpu numaid=\"0\" affinity=\"0000000f\">\n"
      "    <nic><net name=\"mlx5_0\" speed=\"100000\"/></nic>\n"
      "    <nic><net name=\"eth0\" speed=\"25000\"/></nic>\n  </cpu>\n</system>\n");
  System sys = loadSystemFromFile(file.path());
  const Device& verbs = sys.devices()[static_cast<std::size_t>(deviceNamed(sys, "mlx5_0"))];
  EXPECT_TRUE(verbs.rdma);
  EXPECT_THAT(verbs.detail, ::testing::Not(HasSubstr("RDMA")));
  EXPECT_EQ(sys.findNicByInterface("eth0"), deviceNamed(sys, "eth0"));
  EXPECT_EQ(sys.devices()[static_cast<std::size_t>(deviceNamed(sys, "eth0"))].netdev, "eth0");
  EXPECT_FALSE(sys.findNicByInterface("ib0").has_value());
  EXPECT_FALSE(sys.findNicByInterface("").has_value());
}

}  // namespace
}  // namespace hora::topology
