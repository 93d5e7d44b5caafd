// hora-topo: its command line, and the tool run on fixtures.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hora_config.h"
#include "options.h"
#include "topology_test_support.h"

namespace hora::topo_tool {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string usageErrorOf(const std::vector<std::string>& arguments) {
  try {
    parseOptions(arguments);
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

std::vector<std::string> hostsOf(const std::vector<SimulatedRank>& layout) {
  std::vector<std::string> hosts;
  for (const auto& r : layout) hosts.push_back(std::to_string(r.rank) + "@" + r.host);
  return hosts;
}

TEST(HoraTopoOptionsTest, ParsesLayouts) {
  EXPECT_THAT(hostsOf(parseLayout("host0:0-1,host1:2-3")), ElementsAre("0@host0", "1@host0", "2@host1", "3@host1"));
  EXPECT_THAT(hostsOf(parseLayout("a:0,2,b:1,3")), ElementsAre("0@a", "2@a", "1@b", "3@b"));
  EXPECT_THAT(hostsOf(parseLayout("solo:0")), ElementsAre("0@solo"));
}

TEST(HoraTopoOptionsTest, RejectsBadLayouts) {
  auto errorOf = [](const std::string& text) {
    try {
      parseLayout(text);
    } catch (const UsageError& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_THAT(errorOf("0-3"), HasSubstr("before any 'host:'"));
  EXPECT_THAT(errorOf("a:0-1,b:1-2"), HasSubstr("rank 1 appears twice"));
  EXPECT_THAT(errorOf("a:0,b:2"), HasSubstr("rank 1 is missing"));
  EXPECT_THAT(errorOf("a:3-1"), HasSubstr("runs backwards"));
  EXPECT_THAT(errorOf("a:x"), HasSubstr("not a non-negative number"));
  EXPECT_THAT(errorOf(":0"), HasSubstr("empty host name"));
  EXPECT_THAT(errorOf("a:0,,1"), HasSubstr("empty rank"));
  // The whole item is quoted, not the empty text before its dash.
  EXPECT_THAT(errorOf("a:-1"), HasSubstr("'-1' is not a non-negative number"));
  EXPECT_THAT(errorOf("a:3-"), HasSubstr("'3-' is not a non-negative number"));
  EXPECT_THAT(errorOf("a:0-1-2"), HasSubstr("'1-2' is not a non-negative number"));
  EXPECT_THAT(errorOf("a:0-99999999999"), HasSubstr("'99999999999' is too large: at most 4095"));
  EXPECT_THAT(errorOf("a:0-99999999999999999999"), HasSubstr("is too large"));
  EXPECT_THAT(errorOf("a:0-4096"), HasSubstr("'4096' is too large"));
}

TEST(HoraTopoOptionsTest, LayoutsUpToTheMaximumRankCountAreAccepted) {
  EXPECT_EQ(parseLayout("a:0-" + std::to_string(kMaxRanks - 1)).size(), static_cast<std::size_t>(kMaxRanks));
}

// The report has a line per pair of ranks: a rank count is bounded, and 0
// ranks (a report with no ranks, silently) is refused.
TEST(HoraTopoOptionsTest, RankCountIsBetweenOneAndTheMaximum) {
  EXPECT_EQ(parseOptions({"--ranks", "1"}).rankCount, 1);
  EXPECT_EQ(parseOptions({"--ranks", "4096"}).rankCount, 4096);
  EXPECT_THAT(usageErrorOf({"--ranks", "0"}), HasSubstr("--ranks must be between 1 and 4096, got 0"));
  EXPECT_THAT(usageErrorOf({"--ranks", "4097"}), HasSubstr("'4097' is too large: at most 4096"));
  EXPECT_THAT(usageErrorOf({"--ranks=100000"}), HasSubstr("line per pair of ranks"));
  EXPECT_THAT(usageErrorOf({"--ranks", "two"}), HasSubstr("not a non-negative number"));
  EXPECT_THAT(usageErrorOf({"--ranks", ""}), HasSubstr("not a non-negative number"));
}

TEST(HoraTopoOptionsTest, ParsesFlags) {
  Options options = parseOptions({"--topo", "m.xml", "--nvswitch", "--ranks=4", "--json", "--reasons"});
  EXPECT_EQ(options.topologyFile, "m.xml");
  EXPECT_TRUE(options.assumeNvSwitch);
  EXPECT_EQ(options.rankCount, 4);
  EXPECT_TRUE(options.json);
  EXPECT_TRUE(options.reasons);
  EXPECT_FALSE(options.help);
  EXPECT_THAT(usageErrorOf({"--ranks", "2", "--layout", "a:0-1"}), HasSubstr("not both"));
  EXPECT_THAT(usageErrorOf({"--topo"}), HasSubstr("--topo needs a value"));
  EXPECT_THAT(usageErrorOf({"--json=yes"}), HasSubstr("takes no value"));
  EXPECT_THAT(usageErrorOf({"--frobnicate"}), HasSubstr("unknown argument '--frobnicate'"));
}

// Runs hora-topo (HORA_TOPO_BIN) with arguments; returns its exit status and output.
std::pair<int, std::string> runTool(const std::string& arguments) {
  const char* tool = std::getenv("HORA_TOPO_BIN");
  if (tool == nullptr) return {-1, ""};
  std::string command = std::string("timeout 30 ") + tool + " " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  std::string output;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

class HoraTopoToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("HORA_TOPO_BIN") == nullptr) GTEST_SKIP() << "HORA_TOPO_BIN names no hora-topo binary";
  }
};

TEST_F(HoraTopoToolTest, DescribesThisHost) {
  auto [status, output] = runTool("--ranks 2 --reasons");
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("Machine: hwloc (this host)"));
  EXPECT_THAT(output, HasSubstr("CPUs: "));
  EXPECT_THAT(output, HasSubstr("Ring: 0 1"));
}

// This host's network transports: what was found or why not, and with ofi
// forced (libfabric's tcp provider, where the build has libfabric) every
// rank has the device and pairs across hosts use it.
TEST_F(HoraTopoToolTest, ShowsThisHostsNetworkTransports) {
  auto [status, output] = runTool("--layout a:0,b:1 --reasons");
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("Network transports on this host:\n  ib:  "));
  EXPECT_THAT(output, HasSubstr("\n  ofi: "));
  EXPECT_THAT(output, HasSubstr("\n  GPUDirect RDMA: "));
  EXPECT_THAT(output, HasSubstr("0 <-> 1: "));
#if HORA_HAVE_OFI
  ::setenv("HORA_TRANSPORT", "ofi", 1);
  ::setenv("HORA_OFI_PROVIDER", "tcp", 1);
  auto [forcedStatus, forced] = runTool("--layout a:0,b:1 --reasons");
  ::unsetenv("HORA_TRANSPORT");
  ::unsetenv("HORA_OFI_PROVIDER");
  EXPECT_EQ(forcedStatus, 0) << forced;
  EXPECT_THAT(forced, HasSubstr("ofi: usable, libfabric provider tcp"));
  EXPECT_THAT(forced, HasSubstr("rank 1: b, no GPU, libfabric device"));
  EXPECT_THAT(forced, HasSubstr("0 <-> 1: ofi (different hosts"));
#endif
}

TEST_F(HoraTopoToolTest, PrintsMatrixTransportsAndRingForAFixture) {
  auto [status, output] = runTool("--topo " + hora::topology::testing::fixture("nccl-topo/azure-ndv4-topo.xml") +
                                  " --nvswitch --layout a:0,2,4,6,8,10,12,14,b:1,3,5,7,9,11,13,15");
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("GPUs (8):"));
  EXPECT_THAT(output, HasSubstr("PCIe switches (4):"));
  EXPECT_THAT(output, HasSubstr("GPU0 -> NIC0 (PIX"));
  EXPECT_THAT(output, HasSubstr("p2p"));
  EXPECT_THAT(output, HasSubstr("Ring: 0 2 4 6 8 10 12 14 1 3 5 7 9 11 13 15"));
  // The CPUs of each NUMA node, and those a rank using each device keeps its threads on.
  EXPECT_THAT(output, HasSubstr("NUMA node 1: CPUs 24-47"));
  EXPECT_THAT(output, HasSubstr("0001:00:00.0  NUMA 1 (CPUs 24-47)"));
}

TEST_F(HoraTopoToolTest, WritesJson) {
  auto [status, output] = runTool("--topo " + hora::topology::testing::fixture("hwloc/power8gpudistances.hwloc-2.9.0.xml") +
                                  " --ranks 4 --json");
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.front(), '{');
  EXPECT_THAT(output, HasSubstr("\"ring\":[0,1,2,3]"));
  EXPECT_THAT(output, HasSubstr("{\"a\":0,\"b\":1,\"transport\":\"p2p\""));
  EXPECT_THAT(output, HasSubstr("\"class\":\"NVL\""));
}

TEST_F(HoraTopoToolTest, ReportsErrorsAndUsage) {
  auto [status, output] = runTool("--topo " + hora::topology::testing::fixture("nccl-topo/azure-ncv4-graph.xml"));
  EXPECT_EQ(status, 1);
  EXPECT_THAT(output, HasSubstr("hora-topo: "));
  EXPECT_THAT(output, HasSubstr("NCCL_GRAPH_FILE"));
  auto [usageStatus, usage] = runTool("--bogus");
  EXPECT_EQ(usageStatus, 2);
  EXPECT_THAT(usage, HasSubstr("usage: hora-topo"));
}

// Whatever describes the machine, ranks on this host have ib only when a
// verbs device opens here, as in a communicator: a HORA_TOPO_FILE with
// InfiniBand NICs does not give them ib on a host that cannot open one.
TEST_F(HoraTopoToolTest, TopologyFileStillProbesThisHostsNetwork) {
  ::setenv("HORA_TOPO_FILE", hora::topology::testing::fixture("nccl-topo/azure-ndv4-topo.xml").c_str(), 1);
  auto [status, output] = runTool("--layout a:0,b:1 --reasons");
  ::unsetenv("HORA_TOPO_FILE");
  ASSERT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("azure-ndv4-topo.xml (NCCL topology XML)"));
  ASSERT_THAT(output, HasSubstr("Network transports on this host:\n  ib:  "));
  const bool ibHere = output.find("ib:  not available") == std::string::npos &&
                      output.find("ib:  disabled") == std::string::npos;
  const bool ofiHere = output.find("ofi: usable") != std::string::npos;
  EXPECT_THAT(output, HasSubstr(ibHere ? "0 <-> 1: ib" : ofiHere ? "0 <-> 1: ofi" : "0 <-> 1: tcp"));

  // --topo is another machine: nothing is probed, and the report says so.
  auto [otherStatus, other] =
      runTool("--topo " + hora::topology::testing::fixture("nccl-topo/azure-ndv4-topo.xml") + " --layout a:0,b:1");
  EXPECT_EQ(otherStatus, 0) << other;
  EXPECT_THAT(other, HasSubstr("Network transports: not probed"));
}

// Refused before the machine is read: no report of 10^10 lines is started.
TEST_F(HoraTopoToolTest, RefusesRankCountsOutOfRange) {
  for (const char* arguments : {"--ranks 100000", "--ranks 0", "--layout a:0-99999999999"}) {
    auto [status, output] = runTool(arguments);
    EXPECT_EQ(status, 2) << arguments << ": " << output;
    EXPECT_THAT(output, HasSubstr("usage: hora-topo")) << arguments;
  }
}


// Input too large to describe a machine ends in a message and status 1,
// never in an abort: an endless device, and a file of a thousand GPUs.
TEST_F(HoraTopoToolTest, HugeInputEndsInAMessageNotAnAbort) {
  auto [zeroStatus, zero] = runTool("--topo /dev/zero");
  EXPECT_EQ(zeroStatus, 1) << zero;
  EXPECT_THAT(zero, HasSubstr("hora-topo: topology file '/dev/zero' is larger than 64 MiB"));
  std::string gpus;
  for (int g = 1; g <= 1000; ++g) {
    char line[96];
    std::snprintf(line, sizeof line, "<pci busid=\"%04x:01:00.0\" class=\"0x030200\"/>\n", g);
    gpus += line;
  }
  hora::topology::testing::TempFile many("<system version=\"1\">\n<cpu numaid=\"0\">\n" + gpus + "</cpu>\n</system>\n");
  auto [manyStatus, output] = runTool("--topo " + many.path() + " --ranks 2");
  EXPECT_EQ(manyStatus, 1) << output;
  EXPECT_THAT(output, HasSubstr(many.path() + ":643: more than 640 GPUs"));
}

// Whether the bytes are well-formed UTF-8, and no control character is left unescaped.
bool isJsonText(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (length == 0 || (c < 0x20 && c != '\n') || i + length > text.size() || c == 0xc0 || c == 0xc1 || c > 0xf4)
      return false;
    for (std::size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return false;
    i += length;
  }
  return true;
}

// Names reach the JSON from files and from this host; whatever bytes they
// hold (here the file's own name, in Latin-1 with a control character), the
// output is UTF-8 with every control character escaped.
TEST_F(HoraTopoToolTest, WritesValidJsonWhateverBytesANameHolds) {
  hora::topology::testing::TempFile file(
      "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\" class=\"0x030200\"/>\n"
      "</cpu>\n</system>\n",
      "-caf\xe9\x01\x7f.xml");
  auto [status, output] = runTool("--topo '" + file.path() + "' --json");
  ASSERT_EQ(status, 0) << output;
  EXPECT_TRUE(isJsonText(output)) << output;
  EXPECT_THAT(output, HasSubstr("-caf\\ufffd\\u0001\\u007f.xml (NCCL topology XML)"));
}

// A device dropped for its class or vendor is not dropped silently.
TEST_F(HoraTopoToolTest, LogsDevicesItLeavesOut) {
  hora::topology::testing::TempFile file(
      "<system version=\"1\">\n<cpu numaid=\"0\">\n"
      "<pci busid=\"0000:01:00.0\" class=\"0x030200\" vendor=\"0x1002\"/>\n</cpu>\n</system>\n");
  hora::test_support::ScopedEnv debug("HORA_DEBUG", "WARN");
  auto [status, output] = runTool("--topo " + file.path());
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr(file.path() + ":3: <pci> busid=\"0000:01:00.0\" class=\"0x030200\" vendor=\"0x1002\" "
                                "is a display controller not made by NVIDIA"));
  EXPECT_THAT(output, HasSubstr("GPUs: none"));
}

// The RDMA NICs a rank would send through are shown only where the rank
// uses ib: not where this host opens no verbs device (ib disabled here),
// nor, on another machine, where no pair takes ib.
TEST_F(HoraTopoToolTest, ShowsRdmaRailsOnlyForRanksThatUseIb) {
  const std::string ndv4 = hora::topology::testing::fixture("nccl-topo/azure-ndv4-topo.xml");
  {
    hora::test_support::ScopedEnv file("HORA_TOPO_FILE", ndv4);
    hora::test_support::ScopedEnv noIb("HORA_IB_DISABLE", "1");
    auto [status, output] = runTool("--layout a:0-1,b:2-3");
    ASSERT_EQ(status, 0) << output;
    EXPECT_THAT(output, HasSubstr("ib:  disabled"));
    EXPECT_THAT(output, ::testing::Not(HasSubstr("RDMA NIC")));
  }
  {
    hora::test_support::ScopedEnv noIb("HORA_IB_DISABLE", "1");
    auto [status, output] = runTool("--topo " + ndv4 + " --layout a:0-1,b:2-3");
    ASSERT_EQ(status, 0) << output;
    EXPECT_THAT(output, ::testing::Not(HasSubstr("RDMA NIC NIC")));
    EXPECT_THAT(output, ::testing::Not(HasSubstr("RDMA NICs")));
  }
#if HORA_HAVE_IBVERBS
  auto [status, output] = runTool("--topo " + ndv4 + " --layout a:0-1,b:2-3");
  ASSERT_EQ(status, 0) << output;
  EXPECT_THAT(output, ::testing::ContainsRegex("rank 0: a, GPU 0001:00:00.0, RDMA NICs? NIC[0-9]"));
#endif
}

}  // namespace
}  // namespace hora::topo_tool
