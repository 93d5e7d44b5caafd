// Files hora cannot use fail with a hora::Error that says which file and why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>

#include "hora/communicator.h"
#include "topology_test_support.h"

namespace hora::topology {
namespace {

using testing::fixture;
using testing::TempFile;
using ::testing::HasSubstr;

// The error loading `path` raises (fails the test when there is none).
Error loadError(const std::string& path) {
  try {
    loadSystemFromFile(path);
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "loading " << path << " succeeded";
  return Error(ErrorKind::Internal, "");
}

TEST(BadInputTest, MissingFileIsASystemErrorNamingIt) {
  std::string path = fixture("no-such-machine.xml");
  Error error = loadError(path);
  EXPECT_EQ(error.kind(), ErrorKind::System);
  EXPECT_THAT(error.what(), HasSubstr("cannot read topology file '" + path + "'"));
  EXPECT_THAT(error.what(), HasSubstr("ENOENT"));
}

TEST(BadInputTest, MalformedXmlGivesTheLine) {
  TempFile file("<system version=\"1\">\n  <cpu numaid=\"0\">\n    <pci busid=\"0000:01:00.0\"\n</system>\n");
  Error error = loadError(file.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(file.path() + ":4:"));
  EXPECT_THAT(error.what(), HasSubstr("malformed XML"));
}

TEST(BadInputTest, EmptyFileSaysSo) {
  TempFile file("");
  EXPECT_THAT(loadError(file.path()).what(), HasSubstr("holds no XML element"));
}

TEST(BadInputTest, UnknownFormatNamesTheRootElement) {
  TempFile file("<?xml version=\"1.0\"?>\n<machine><gpu/></machine>\n");
  Error error = loadError(file.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("its root element is <machine>"));
  EXPECT_THAT(error.what(), HasSubstr("<topology> (hwloc XML) or <system> (NCCL topology XML)"));
}

TEST(BadInputTest, NcclGraphFileIsRecognisedAndRefused) {
  Error error = loadError(fixture("nccl-topo/azure-ncv4-graph.xml"));
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("NCCL_GRAPH_FILE"));
}

TEST(BadInputTest, NcclFileWithBadValuesNamesLineAndAttribute) {
  TempFile badBus(
      "<system version=\"1\">\n <cpu numaid=\"0\">\n  <pci busid=\"gpu-one\" class=\"0x030200\"/>\n </cpu>\n</system>\n");
  Error error = loadError(badBus.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(badBus.path() + ":3: <pci> has \"gpu-one\", which is not a PCI bus id"));

  TempFile noBus("<system version=\"1\">\n <cpu numaid=\"0\">\n  <pci class=\"0x030200\"/>\n </cpu>\n</system>\n");
  EXPECT_THAT(loadError(noBus.path()).what(), HasSubstr(":3: <pci> has no busid attribute"));

  TempFile badClass(
      "<system version=\"1\">\n <cpu numaid=\"0\">\n  <pci busid=\"0000:01:00.0\" class=\"display\"/>\n </cpu>\n</system>\n");
  EXPECT_THAT(loadError(badClass.path()).what(), HasSubstr("class=\"display\" is not a number"));

  TempFile badTarget(
      "<system version=\"1\">\n <cpu numaid=\"0\">\n  <pci busid=\"0000:01:00.0\" class=\"0x030200\">\n"
      "   <gpu dev=\"0\" sm=\"80\">\n    <nvlink target=\"nowhere\" count=\"2\" tclass=\"0x030200\"/>\n"
      "   </gpu>\n  </pci>\n </cpu>\n</system>\n");
  EXPECT_THAT(loadError(badTarget.path()).what(), HasSubstr(":5: <nvlink> target=\"nowhere\" is not a PCI bus id"));
}

// An NCCL file with one GPU whose <nvlink> to the NVSwitch fabric counts
// `count` links.
std::string ncclFileWithNvLinkCount(const std::string& count) {
  return "<system version=\"1\">\n <cpu numaid=\"0\">\n  <pci busid=\"0000:01:00.0\" class=\"0x030200\">\n"
         "   <gpu dev=\"0\" sm=\"80\">\n    <nvlink target=\"ffffffff:ff:00.0\" count=\"" +
         count + "\" tclass=\"0x068000\"/>\n   </gpu>\n  </pci>\n </cpu>\n</system>\n";
}

TEST(BadInputTest, NcclNvLinkCountOutsideOneToSixtyFourIsRefused) {
  for (const std::string count : {"999999999999", "65", "0", "-5", "99999999999999999999999"}) {
    TempFile file(ncclFileWithNvLinkCount(count));
    Error error = loadError(file.path());
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr(file.path() + ":5: <nvlink> count=\"" + count +
                                        "\" must be between 1 and 64 links"));
  }
}

TEST(BadInputTest, NcclNvLinkCountsFromOneToSixtyFourAreAccepted) {
  for (const std::string count : {"1", "12", "64"}) {
    TempFile file(ncclFileWithNvLinkCount(count));
    EXPECT_NO_THROW(loadSystemFromFile(file.path())) << "count=" << count;
  }
}

TEST(BadInputTest, NcclGpusWithOneBusIdAreRefused) {
  TempFile file(
      "<system version=\"1\">\n <cpu numaid=\"0\">\n  <pci busid=\"0000:01:00.0\" class=\"0x030200\"/>\n"
      "  <pci busid=\"0000:01:00.0\" class=\"0x030200\"/>\n </cpu>\n</system>\n");
  Error error = loadError(file.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(file.path() + ":4: <pci> busid=\"0000:01:00.0\" appears twice"
                                                    " (the first at line 3)"));
}

TEST(BadInputTest, NcclBusIdsAreComparedInCanonicalForm) {
  // "01:00.0" and "0000:01:00.0" address the same function.
  TempFile file(
      "<system version=\"1\">\n <cpu numaid=\"0\">\n  <pci busid=\"0000:01:00.0\" class=\"0x030200\"/>\n"
      " </cpu>\n <cpu numaid=\"1\">\n  <pci busid=\"01:00.0\" class=\"0x030200\"/>\n </cpu>\n</system>\n");
  EXPECT_THAT(loadError(file.path()).what(), HasSubstr(":6: <pci> busid=\"0000:01:00.0\" appears twice"));
}

TEST(BadInputTest, NcclCpusWithOneNumaIdAreRefused) {
  TempFile file(
      "<system version=\"1\">\n <cpu numaid=\"0\" affinity=\"0000000f\"/>\n"
      " <cpu numaid=\"0\" affinity=\"000000f0\"/>\n</system>\n");
  Error error = loadError(file.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(file.path() + ":3: a second <cpu> of NUMA node 0 (the first is at line 2)"));
}

// A directory opens as a stream that reads as empty; the error must say
// what the path is, not that a file holds no XML.
TEST(BadInputTest, DirectoryIsNamedAsOne) {
  std::string dir = std::filesystem::path(fixture("nccl-topo")).string();
  Error error = loadError(dir);
  EXPECT_EQ(error.kind(), ErrorKind::System);
  EXPECT_THAT(error.what(), HasSubstr("cannot read topology file '" + dir + "'"));
  EXPECT_THAT(error.what(), HasSubstr("EISDIR"));
  EXPECT_THAT(error.what(), ::testing::Not(HasSubstr("holds no XML element")));
}

// One <cpu> of NUMA node 0 holding `body`, in a file of NCCL's format.
std::string ncclFile(const std::string& body, const std::string& systemAttributes = "version=\"1\"") {
  return "<system " + systemAttributes + ">\n <cpu numaid=\"0\" affinity=\"0000000f\">\n" + body +
         " </cpu>\n</system>\n";
}

TEST(BadInputTest, NcclPciWithoutClassIsRefused) {
  // NCCL requires it: without a class the device could be anything.
  TempFile file(ncclFile("  <pci busid=\"0000:01:00.0\" link_width=\"16\"/>\n"));
  Error error = loadError(file.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(file.path() + ":3: <pci> has no class attribute"));
}

TEST(BadInputTest, NcclFormatVersionMustBeOne) {
  const std::string gpu = "  <pci busid=\"0000:01:00.0\" class=\"0x030200\"/>\n";
  TempFile two(ncclFile(gpu, "version=\"2\""));
  Error error = loadError(two.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(two.path() + ":1: <system> version=\"2\": hora reads version 1"));
  TempFile none(ncclFile(gpu, "name=\"m\""));
  EXPECT_THAT(loadError(none.path()).what(), HasSubstr(none.path() + ":1: <system> has no version attribute"));
  TempFile one(ncclFile(gpu));
  EXPECT_NO_THROW(loadSystemFromFile(one.path()));
}

struct OutOfRange {
  std::string body;      // the <cpu>'s content
  std::string expected;  // what the error must say
};

// Values that would wrap, read as absurd machines, or be NaN: each refused
// with the attribute, the value and the file.
TEST(BadInputTest, NcclNumbersOutOfRangeAreRefused) {
  auto gpuWith = [](const std::string& pciAttributes, const std::string& gpuAttributes = "") {
    return "  <pci busid=\"0000:01:00.0\" class=\"0x030200\" " + pciAttributes + "><gpu dev=\"0\" " + gpuAttributes +
           "/></pci>\n";
  };
  auto nicWith = [](const std::string& speed) {
    return "  <pci busid=\"0000:02:00.0\" class=\"0x020700\"><nic><net name=\"mlx5_0\" speed=\"" + speed +
           "\"/></nic></pci>\n";
  };
  const std::vector<OutOfRange> cases = {
      {gpuWith("", "sm=\"99999999999\""), "<gpu> sm=\"99999999999\" is out of range"},
      {gpuWith("link_width=\"4096\""), "<pci> link_width=\"4096\" is out of range: a PCIe link has at most 32 lanes"},
      {gpuWith("link_width=\"-16\""), "<pci> link_width=\"-16\" is out of range"},
      {gpuWith("link_speed=\"1e30 GT/s\""), "<pci> link_speed=\"1e30 GT/s\" is out of range"},
      {gpuWith("link_speed=\"nan\""), "<pci> link_speed=\"nan\" is out of range"},
      {gpuWith("link_speed=\"-8 GT/s\""), "<pci> link_speed=\"-8 GT/s\" is out of range"},
      {nicWith("1e30"), "<net> speed=\"1e30\" is out of range: speed is in Mbit/s"},
      {nicWith("inf"), "<net> speed=\"inf\" is out of range"},
  };
  for (const auto& c : cases) {
    TempFile file(ncclFile(c.body));
    Error error = loadError(file.path());
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument) << c.body;
    EXPECT_THAT(error.what(), HasSubstr(file.path() + ":")) << c.body;
    EXPECT_THAT(error.what(), HasSubstr(c.expected)) << c.body;
  }
  for (const std::string numa : {"99999999999", "4294967296", "-1", "1024"}) {
    TempFile file("<system version=\"1\">\n <cpu numaid=\"" + numa + "\"/>\n</system>\n");
    EXPECT_THAT(loadError(file.path()).what(),
                HasSubstr(file.path() + ":2: <cpu> numaid=\"" + numa + "\" is out of range: NUMA node ids run from 0"))
        << numa;
  }
  TempFile bigClass(ncclFile("  <pci busid=\"0000:01:00.0\" class=\"0x1030200\"/>\n"));
  EXPECT_THAT(loadError(bigClass.path()).what(), HasSubstr("<pci> class=\"0x1030200\" is out of range"));
}

TEST(BadInputTest, NcclNumbersAtTheirBoundsAreAccepted) {
  TempFile file(
      "<system version=\"1\">\n <cpu numaid=\"1023\">\n"
      "  <pci busid=\"0000:01:00.0\" class=\"0x030200\" link_speed=\"128.0 GT/s PCIe\" link_width=\"32\">"
      "<gpu dev=\"0\" sm=\"120\"/></pci>\n"
      "  <pci busid=\"0000:02:00.0\" class=\"0x020700\" link_width=\"0\" link_speed=\"\">"
      "<nic><net name=\"mlx5_0\" speed=\"800000\"/></nic></pci>\n </cpu>\n</system>\n");
  System sys = loadSystemFromFile(file.path());
  EXPECT_EQ(sys.devices()[testing::gpuIndex(sys, 0)].numaNode, 1023);
  EXPECT_EQ(sys.devices()[testing::gpuIndex(sys, 0)].smVersion, 120);
}

// The ib transport opens NICs by name: a name twice would hide one port.
TEST(BadInputTest, NcclNicNamesMustBeUnique) {
  TempFile file(ncclFile(
      "  <pci busid=\"0000:02:00.0\" class=\"0x020700\"><nic><net name=\"mlx5_0\" speed=\"200000\"/></nic></pci>\n"
      "  <nic><net name=\"mlx5_0\" speed=\"100000\"/></nic>\n"));
  Error error = loadError(file.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(file.path() + ":4: <net> name=\"mlx5_0\" appears twice (the first at line 3)"));
}

// NCCL reads no <pci> inside a GPU's or NIC's: the device would vanish.
TEST(BadInputTest, NcclPciInsideAGpuOrNicIsRefused) {
  TempFile gpu(ncclFile(
      "  <pci busid=\"0000:01:00.0\" class=\"0x030200\">\n   <pci busid=\"0000:02:00.0\" class=\"0x030200\"/>\n"
      "  </pci>\n"));
  Error error = loadError(gpu.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(gpu.path() + ":4: <pci> busid=\"0000:02:00.0\" lies inside the <pci> of a GPU "
                                                    "(busid=\"0000:01:00.0\", line 3)"));
  TempFile nic(ncclFile(
      "  <pci busid=\"0000:01:00.0\" class=\"0x020000\"><pci busid=\"0000:02:00.0\" class=\"0x030200\"/></pci>\n"));
  EXPECT_THAT(loadError(nic.path()).what(), HasSubstr("lies inside the <pci> of a NIC"));
  // A device behind some other function (a storage controller) is still read.
  TempFile other(ncclFile(
      "  <pci busid=\"0000:01:00.0\" class=\"0x010802\"><pci busid=\"0000:02:00.0\" class=\"0x030200\"/></pci>\n"));
  EXPECT_EQ(loadSystemFromFile(other.path()).devicesOfKind(DeviceKind::Gpu).size(), 1u);
}

TEST(BadInputTest, HwlocRefusesAWellFormedButInvalidExport) {
  TempFile file("<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Bogus\"/>\n</topology>\n");
  Error error = loadError(file.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("not a valid hwloc XML export"));
}


// A wrong path (a device, a disk image) is not read until memory runs out:
// beyond 64 MiB a file is refused, a regular one before it is read.
TEST(BadInputTest, FilesBeyondSixtyFourMebibytesAreRefused) {
  TempFile sparse("");
  std::filesystem::resize_file(sparse.path(), (64u << 20) + 1);  // a hole: no disk space taken
  for (const std::string& path : {sparse.path(), std::string("/dev/zero")}) {
    Error error = loadError(path);
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument) << path;
    EXPECT_THAT(error.what(), HasSubstr("topology file '" + path + "' is larger than 64 MiB")) << path;
  }
}

// `count` copies of `line(i)`, one per line, in a <cpu> of NCCL's format:
// the i-th (from 0) is at line i + 3.
std::string ncclFileOf(int count, const std::function<std::string(int)>& line) {
  std::string body;
  for (int i = 0; i < count; ++i) body += line(i) + "\n";
  return ncclFile(body);
}

std::string gpuLine(int i) {
  char text[96];
  std::snprintf(text, sizeof text, "  <pci busid=\"%04x:01:00.0\" class=\"0x030200\"/>", i + 1);
  return text;
}

std::string nicLine(int i) {
  return "  <nic><net name=\"eth" + std::to_string(i) + "\" dev=\"" + std::to_string(i) + "\"/></nic>";
}

// As NCCL holds at most 640 nodes of a type: the paths between every two
// devices grow with the square of their count, and a file of thousands of
// GPUs took minutes and then all memory. The device that goes too far is
// named by its line.
TEST(BadInputTest, NcclFilesWithMoreThan640DevicesOfAKindAreRefused) {
  TempFile gpus(ncclFileOf(641, gpuLine));
  Error error = loadError(gpus.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(gpus.path() + ":643: more than 640 GPUs"));
  TempFile nics(ncclFileOf(641, nicLine));
  EXPECT_THAT(loadError(nics.path()).what(), HasSubstr(nics.path() + ":643: more than 640 NICs"));
}

TEST(BadInputTest, NcclFilesWith640DevicesOfEachKindAreRead) {
  TempFile file(ncclFileOf(1280, [](int i) { return i < 640 ? gpuLine(i) : nicLine(i - 640); }));
  System sys = loadSystemFromFile(file.path());
  EXPECT_EQ(sys.devicesOfKind(DeviceKind::Gpu).size(), 640u);
  EXPECT_EQ(sys.devicesOfKind(DeviceKind::Nic).size(), 640u);
}

// GPUs are found by their bus id: hwloc reads a file that gives two
// devices one without a word, so hora refuses it, as it does in NCCL's format.
TEST(BadInputTest, HwlocDevicesWithOneBusIdAreRefused) {
  std::string text = testing::readText(fixture("hwloc/32em64t-2n8c2t-pci-normalio.hwloc-2.9.0.xml"));
  const std::string second = "pci_busid=\"0000:84:00.0\"";
  ASSERT_NE(text.find(second), std::string::npos);
  text.replace(text.find(second), second.size(), "pci_busid=\"0000:83:00.0\"");
  TempFile file(text);
  Error error = loadError(file.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(file.path() + ": two PCI devices have bus id 0000:83:00.0 (a GPU and a GPU)"));
}

}  // namespace
}  // namespace hora::topology
