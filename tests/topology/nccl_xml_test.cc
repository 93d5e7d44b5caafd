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


// Some dumps write a class as its leading bytes only ("0x0302": base class
// and subclass). NCCL matches classes by their leading digits, so those are
// GPUs, InfiniBand NICs and a PCIe switch as their full codes would be;
// read as numbers they were classes of nothing, and every device vanished.
TEST(NcclXmlTest, ClassCodesOfSixteenBitsAreReadAsNcclReadsThem) {
  TempFile file(
      "<system version=\"1\">\n  <cpu numaid=\"0\" affinity=\"0000000f\">\n"
      "    <pci busid=\"ffff:ff:01.0\" class=\"0x0604\" link_speed=\"16 GT/s\" link_width=\"16\">\n"
      "      <pci busid=\"0003:00:00.0\" class=\"0x0302\" link_speed=\"16 GT/s\" link_width=\"16\">"
      "<gpu dev=\"0\" sm=\"80\"><nvlink target=\"0004:00:00.0\" count=\"4\" tclass=\"0x0302\"/></gpu></pci>\n"
      "      <pci busid=\"0103:00:00.0\" class=\"0x0207\" link_speed=\"16 GT/s\" link_width=\"16\"/>\n"
      "      <pci busid=\"0004:00:00.0\" class=\"0x03\" link_speed=\"16 GT/s\" link_width=\"16\"/>\n"
      "      <pci busid=\"0104:00:00.0\" class=\"0x0200\" link_speed=\"16 GT/s\" link_width=\"16\"/>\n"
      "    </pci>\n  </cpu>\n</system>\n");
  System sys = loadSystemFromFile(file.path());
  ASSERT_EQ(sys.devicesOfKind(DeviceKind::Gpu).size(), 2u);
  ASSERT_EQ(sys.devicesOfKind(DeviceKind::Nic).size(), 2u);
  ASSERT_EQ(sys.pciSwitches().size(), 1u);
  EXPECT_EQ(sys.pciSwitches()[0].devices.size(), 4u);
  EXPECT_EQ(sys.pciePathBetween(gpuIndex(sys, 0), gpuIndex(sys, 1)), PathClass::Pix);
  EXPECT_EQ(gpuPath(sys, 0, 1), PathClass::Nvl);  // tclass="0x0302" is a GPU too
  const Device& infiniband = sys.devices()[static_cast<std::size_t>(deviceNamed(sys, "NIC0"))];
  EXPECT_TRUE(infiniband.rdma);
  EXPECT_EQ(infiniband.detail, "InfiniBand");
  const Device& ethernet = sys.devices()[static_cast<std::size_t>(deviceNamed(sys, "NIC1"))];
  EXPECT_FALSE(ethernet.rdma);
  EXPECT_EQ(ethernet.detail, "Ethernet");
}

// NCCL's InfiniBand plugin serves every verbs device (InfiniBand, and RoCE
// NICs such as Broadcom's bnxt_re0 or Intel's irdma0) and writes its
// system image GUID, never 0, as the port's guid; its socket transport
// writes the port's index there. The guid, not a Mellanox name, makes a
// port RDMA capable.
TEST(NcclXmlTest, VerbsPortsAreKnownByTheirGuidNotTheirName) {
  auto net = [](const std::string& name, int dev, const std::string& guid) {
    return "<nic><net name=\"" + name + "\" dev=\"" + std::to_string(dev) + "\" speed=\"100000\"" +
           (guid.empty() ? "" : " guid=\"" + guid + "\"") + "/></nic>";
  };
  TempFile file("<system version=\"1\">\n  <cpu numaid=\"0\" affinity=\"0000000f\">\n"
                "    <pci busid=\"0000:12:00.0\" class=\"0x020000\" vendor=\"0x14e4\">" +
                net("bnxt_re0", 0, "0x5cff35fffe0a1b2c") + "</pci>\n" + "    " +
                net("irdma0", 1, "0x6cfe54fffe3d2a10") + "\n    " + net("eth0", 2, "0x2") + "\n    " +
                net("eth1", 3, "0x0") + "\n    " + net("eth2", 4, "") + "\n    " + net("mlx5_0", 5, "") +
                "\n  </cpu>\n</system>\n");
  System sys = loadSystemFromFile(file.path());
  for (const char* verbs : {"bnxt_re0", "irdma0", "mlx5_0"}) {
    ASSERT_GE(deviceNamed(sys, verbs), 0) << verbs;
    const Device& nic = sys.devices()[static_cast<std::size_t>(deviceNamed(sys, verbs))];
    EXPECT_TRUE(nic.rdma) << verbs;
    EXPECT_EQ(nic.netdev, "") << verbs;  // a verbs device is no network interface
  }
  for (const char* socket : {"eth0", "eth1", "eth2"}) {
    ASSERT_GE(deviceNamed(sys, socket), 0) << socket;
    const Device& nic = sys.devices()[static_cast<std::size_t>(deviceNamed(sys, socket))];
    EXPECT_FALSE(nic.rdma) << socket;
    EXPECT_EQ(nic.netdev, socket);
  }
  EXPECT_TRUE(sys.hasRdmaNic());
}

}  // namespace
}  // namespace hora::topology
