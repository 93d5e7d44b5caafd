// Files hora cannot use fail with a hora::Error that says which file and why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

TEST(BadInputTest, HwlocRefusesAWellFormedButInvalidExport) {
  TempFile file("<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Bogus\"/>\n</topology>\n");
  Error error = loadError(file.path());
  EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("not a valid hwloc XML export"));
}

}  // namespace
}  // namespace hora::topology
