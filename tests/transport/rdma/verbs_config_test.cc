// The verbs backend's configuration, as pure functions: which devices and
// ports NCCL_IB_HCA allows, the NCCL_IB_* settings with their defaults and
// ranges, the GID a port sends from, and which ports share a fabric.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "base/error.h"
#include "transport/rdma/verbs/fabric.h"
#include "transport/rdma/verbs/gid_choice.h"
#include "transport/rdma/verbs/hca_filter.h"
#include "transport/rdma/verbs/ib_settings.h"

namespace hora::transport::rdma::verbs {
namespace {

// Every variable these tests read, cleared before each test and restored
// after it, so a developer's own NCCL_IB_* settings change nothing here.
class VerbsEnvironment : public ::testing::Test {
 protected:
  static constexpr const char* kNames[] = {
      "HORA_IB_HCA", "NCCL_IB_HCA", "HORA_IB_TIMEOUT", "NCCL_IB_TIMEOUT", "HORA_IB_RETRY_CNT",
      "NCCL_IB_RETRY_CNT", "HORA_IB_TC", "NCCL_IB_TC", "HORA_IB_SL", "NCCL_IB_SL",
      "HORA_IB_QPS_PER_CONNECTION", "NCCL_IB_QPS_PER_CONNECTION", "HORA_IB_GID_INDEX", "NCCL_IB_GID_INDEX"};

  void SetUp() override {
    for (const char* name : kNames) {
      if (const char* value = std::getenv(name)) saved_[name] = value;
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : kNames) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }

 private:
  std::map<std::string, std::string> saved_;
};

// The message of the InvalidArgument error `body` throws ("" if none).
template <typename Body>
std::string invalidArgument(Body body) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// --- NCCL_IB_HCA ----------------------------------------------------------

TEST(HcaFilter, UnsetAllowsEveryDeviceAndPort) {
  const HcaFilter filter;
  EXPECT_FALSE(filter.restricts());
  EXPECT_TRUE(filter.allows("mlx5_0", 1));
  EXPECT_TRUE(filter.allows("rxe0", 2));
}

TEST(HcaFilter, AnEntryIsANamePrefixByDefault) {
  const HcaFilter filter = HcaFilter::parse("mlx5");
  EXPECT_TRUE(filter.allows("mlx5_0", 1));
  EXPECT_TRUE(filter.allows("mlx5_1", 2));
  EXPECT_FALSE(filter.allows("mlx4_0", 1));
  EXPECT_FALSE(filter.allows("mlx", 1));  // shorter than the prefix
}

TEST(HcaFilter, APrefixAlsoMatchesLongerNumbers) {
  // NCCL's documented trap: "mlx5_1" is a prefix of mlx5_10.
  const HcaFilter filter = HcaFilter::parse("mlx5_1");
  EXPECT_TRUE(filter.allows("mlx5_1", 1));
  EXPECT_TRUE(filter.allows("mlx5_10", 1));
  EXPECT_FALSE(filter.allows("mlx5_2", 1));
}

TEST(HcaFilter, EqualsMakesEveryEntryExact) {
  const HcaFilter filter = HcaFilter::parse("=mlx5_1,mlx5_3");
  EXPECT_TRUE(filter.exact());
  EXPECT_TRUE(filter.allows("mlx5_1", 1));
  EXPECT_TRUE(filter.allows("mlx5_3", 1));
  EXPECT_FALSE(filter.allows("mlx5_10", 1));
  EXPECT_FALSE(filter.allows("mlx5_", 1));
  EXPECT_FALSE(filter.allows("mlx5_2", 1));
}

TEST(HcaFilter, APortRestrictsTheEntryToThatPort) {
  const HcaFilter filter = HcaFilter::parse("mlx5_0:1,mlx5_1:2");
  ASSERT_EQ(filter.entries().size(), 2u);
  EXPECT_EQ(filter.entries()[0].name, "mlx5_0");
  EXPECT_EQ(filter.entries()[0].port, 1);
  EXPECT_TRUE(filter.allows("mlx5_0", 1));
  EXPECT_FALSE(filter.allows("mlx5_0", 2));
  EXPECT_TRUE(filter.allows("mlx5_1", 2));
  EXPECT_FALSE(filter.allows("mlx5_1", 1));
}

TEST(HcaFilter, CaretExcludesTheListedDevices) {
  const HcaFilter filter = HcaFilter::parse("^mlx5_2,mlx4");
  EXPECT_TRUE(filter.excludes());
  EXPECT_FALSE(filter.exact());
  EXPECT_FALSE(filter.allows("mlx5_2", 1));
  EXPECT_FALSE(filter.allows("mlx5_23", 1));  // a prefix, still
  EXPECT_FALSE(filter.allows("mlx4_0", 1));
  EXPECT_TRUE(filter.allows("mlx5_0", 1));
}

TEST(HcaFilter, CaretEqualsExcludesExactlyOnePort) {
  const HcaFilter filter = HcaFilter::parse("^=mlx5_0:1");
  EXPECT_TRUE(filter.excludes());
  EXPECT_TRUE(filter.exact());
  EXPECT_FALSE(filter.allows("mlx5_0", 1));
  EXPECT_TRUE(filter.allows("mlx5_0", 2));   // another port of it
  EXPECT_TRUE(filter.allows("mlx5_01", 1));  // exact: not a prefix
  EXPECT_TRUE(filter.allows("mlx5_1", 1));
}

TEST(HcaFilter, EmptyEntriesAndBlanksAreIgnored) {
  const HcaFilter filter = HcaFilter::parse("  mlx5_0 , ,mlx5_1 : 2,, ");
  ASSERT_EQ(filter.entries().size(), 2u);
  EXPECT_EQ(filter.entries()[0].name, "mlx5_0");
  EXPECT_EQ(filter.entries()[0].port, HcaFilter::kAnyPort);
  EXPECT_EQ(filter.entries()[1].name, "mlx5_1");
  EXPECT_EQ(filter.entries()[1].port, 2);
  EXPECT_TRUE(filter.allows("mlx5_0", 1));
  EXPECT_TRUE(filter.allows("mlx5_1", 2));
  EXPECT_FALSE(filter.allows("mlx5_1", 1));
}

TEST(HcaFilter, APortThatIsNotANumberIsAnErrorNamingTheEntry) {
  for (const char* text : {"mlx5_0:x", "mlx5_0:", "mlx5_0:1x", "mlx5_0:-1", "mlx5_0:0", "mlx5_0:256",
                           "mlx5_0:1:2", "mlx5_0: 1 2"}) {
    SCOPED_TRACE(text);
    const std::string message = invalidArgument([&] { HcaFilter::parse(text); });
    EXPECT_CONTAINS(message, "NCCL_IB_HCA");
    EXPECT_CONTAINS(message, "entry '");
    EXPECT_CONTAINS(message, "not a port number");
  }
  EXPECT_CONTAINS(invalidArgument([] { HcaFilter::parse("mlx5_1,mlx5_0:x"); }), "entry 'mlx5_0:x'");
}

TEST(HcaFilter, AnEntryWithoutANameIsAnError) {
  EXPECT_CONTAINS(invalidArgument([] { HcaFilter::parse("mlx5_0,:1"); }), "entry ':1' has no device name");
}

TEST(HcaFilter, ABlankInsideANameIsAnError) {
  EXPECT_CONTAINS(invalidArgument([] { HcaFilter::parse("mlx5 0"); }), "blank inside the device name");
}

TEST(HcaFilter, CaretOrEqualsOnALaterEntryIsAnError) {
  // They apply to the whole list; "mlx5_0,^mlx5_1" would otherwise silently
  // look for a device called "^mlx5_1".
  EXPECT_CONTAINS(invalidArgument([] { HcaFilter::parse("mlx5_0,^mlx5_1"); }), "entry '^mlx5_1'");
  EXPECT_CONTAINS(invalidArgument([] { HcaFilter::parse("mlx5_0,=mlx5_1"); }), "must come first");
  // '=' then '^' is not NCCL's order either.
  EXPECT_CONTAINS(invalidArgument([] { HcaFilter::parse("=^mlx5_1"); }), "entry '^mlx5_1'");
}

TEST(HcaFilter, AListThatNamesNothingIsAnError) {
  for (const char* text : {"", " ", ",", "^", "=", "^=", "^, ,"}) {
    SCOPED_TRACE(text);
    EXPECT_CONTAINS(invalidArgument([&] { HcaFilter::parse(text); }), "names no device");
  }
}

TEST_F(VerbsEnvironment, HcaFilterReadsTheVariableAndHoraWins) {
  EXPECT_FALSE(HcaFilter::fromEnvironment().restricts());
  set("NCCL_IB_HCA", "mlx5_0");
  EXPECT_TRUE(HcaFilter::fromEnvironment().allows("mlx5_0", 1));
  EXPECT_FALSE(HcaFilter::fromEnvironment().allows("mlx5_1", 1));
  set("HORA_IB_HCA", "=mlx5_1");
  EXPECT_FALSE(HcaFilter::fromEnvironment().allows("mlx5_0", 1));
  EXPECT_TRUE(HcaFilter::fromEnvironment().allows("mlx5_1", 1));
}

TEST_F(VerbsEnvironment, HcaFilterErrorsNameTheVariableThatWasSet) {
  set("HORA_IB_HCA", "mlx5_0:one");
  const std::string message = invalidArgument([] { HcaFilter::fromEnvironment(); });
  EXPECT_CONTAINS(message, "HORA_IB_HCA='mlx5_0:one'");
  EXPECT_CONTAINS(message, "port 'one'");
}

// --- NCCL_IB_* settings ---------------------------------------------------

TEST_F(VerbsEnvironment, SettingsDefaultToNcclDefaults) {
  const IbSettings settings = readIbSettings();
  EXPECT_EQ(settings.timeout, 20);
  EXPECT_EQ(settings.retryCount, 7);
  EXPECT_EQ(settings.trafficClass, 0);
  EXPECT_EQ(settings.serviceLevel, 0);
  EXPECT_EQ(settings.queuePairsPerConnection, 1);
  EXPECT_FALSE(settings.gidIndex.has_value());
}

TEST_F(VerbsEnvironment, SettingsReadNcclNames) {
  set("NCCL_IB_TIMEOUT", "22");
  set("NCCL_IB_RETRY_CNT", "3");
  set("NCCL_IB_TC", "106");
  set("NCCL_IB_SL", "5");
  set("NCCL_IB_QPS_PER_CONNECTION", "4");
  set("NCCL_IB_GID_INDEX", "3");
  const IbSettings settings = readIbSettings();
  EXPECT_EQ(settings.timeout, 22);
  EXPECT_EQ(settings.retryCount, 3);
  EXPECT_EQ(settings.trafficClass, 106);
  EXPECT_EQ(settings.serviceLevel, 5);
  EXPECT_EQ(settings.queuePairsPerConnection, 4);
  EXPECT_EQ(settings.gidIndex, 3);
}

TEST_F(VerbsEnvironment, HoraNamesWinOverNcclNames) {
  set("NCCL_IB_TIMEOUT", "22");
  set("HORA_IB_TIMEOUT", "14");
  set("NCCL_IB_RETRY_CNT", "3");
  set("HORA_IB_RETRY_CNT", "6");
  set("NCCL_IB_TC", "1");
  set("HORA_IB_TC", "2");
  set("NCCL_IB_SL", "1");
  set("HORA_IB_SL", "2");
  set("NCCL_IB_QPS_PER_CONNECTION", "1");
  set("HORA_IB_QPS_PER_CONNECTION", "2");
  set("NCCL_IB_GID_INDEX", "1");
  set("HORA_IB_GID_INDEX", "2");
  const IbSettings settings = readIbSettings();
  EXPECT_EQ(settings.timeout, 14);
  EXPECT_EQ(settings.retryCount, 6);
  EXPECT_EQ(settings.trafficClass, 2);
  EXPECT_EQ(settings.serviceLevel, 2);
  EXPECT_EQ(settings.queuePairsPerConnection, 2);
  EXPECT_EQ(settings.gidIndex, 2);
}

TEST_F(VerbsEnvironment, RangeEndsAreAccepted) {
  set("NCCL_IB_TIMEOUT", "1");
  set("NCCL_IB_RETRY_CNT", "0");
  set("NCCL_IB_TC", "255");
  set("NCCL_IB_SL", "15");
  set("NCCL_IB_QPS_PER_CONNECTION", "128");
  set("NCCL_IB_GID_INDEX", "0");
  IbSettings settings = readIbSettings();
  EXPECT_EQ(settings.timeout, 1);
  EXPECT_EQ(settings.retryCount, 0);
  EXPECT_EQ(settings.trafficClass, 255);
  EXPECT_EQ(settings.serviceLevel, 15);
  EXPECT_EQ(settings.queuePairsPerConnection, 128);
  EXPECT_EQ(settings.gidIndex, 0);
  set("NCCL_IB_TIMEOUT", "31");
  set("NCCL_IB_RETRY_CNT", "7");
  set("NCCL_IB_TC", "0");
  set("NCCL_IB_SL", "0");
  set("NCCL_IB_QPS_PER_CONNECTION", "1");
  set("NCCL_IB_GID_INDEX", "255");
  settings = readIbSettings();
  EXPECT_EQ(settings.timeout, 31);
  EXPECT_EQ(settings.retryCount, 7);
  EXPECT_EQ(settings.queuePairsPerConnection, 1);
  EXPECT_EQ(settings.gidIndex, 255);
}

TEST_F(VerbsEnvironment, MinusOneMeansUnsetWhereNcclSaysSo) {
  set("NCCL_IB_GID_INDEX", "-1");
  set("NCCL_IB_TC", "-1");
  set("NCCL_IB_SL", "-1");
  const IbSettings settings = readIbSettings();
  EXPECT_FALSE(settings.gidIndex.has_value());
  EXPECT_EQ(settings.trafficClass, 0);
  EXPECT_EQ(settings.serviceLevel, 0);
}

TEST_F(VerbsEnvironment, OutOfRangeIsAnErrorNamingVariableValueAndRange) {
  struct Case {
    const char* name;
    const char* value;
    const char* range;
  };
  for (const Case& c : {Case{"NCCL_IB_TIMEOUT", "0", "(1-31)"}, Case{"NCCL_IB_TIMEOUT", "32", "(1-31)"},
                        Case{"HORA_IB_TIMEOUT", "-3", "(1-31)"}, Case{"NCCL_IB_RETRY_CNT", "8", "(0-7)"},
                        Case{"NCCL_IB_RETRY_CNT", "-1", "(0-7)"}, Case{"NCCL_IB_TC", "256", "(0-255)"},
                        Case{"NCCL_IB_TC", "-2", "(0-255)"}, Case{"NCCL_IB_SL", "16", "(0-15)"},
                        Case{"NCCL_IB_QPS_PER_CONNECTION", "0", "(1-128)"},
                        Case{"NCCL_IB_QPS_PER_CONNECTION", "129", "(1-128)"},
                        Case{"NCCL_IB_GID_INDEX", "256", "(-1-255)"}, Case{"HORA_IB_GID_INDEX", "-2", "(-1-255)"}}) {
    SCOPED_TRACE(std::string(c.name) + "=" + c.value);
    set(c.name, c.value);
    const std::string message = invalidArgument([] { readIbSettings(); });
    EXPECT_CONTAINS(message, std::string(c.name) + "=" + c.value);
    EXPECT_CONTAINS(message, c.range);
    ::unsetenv(c.name);
  }
}

TEST_F(VerbsEnvironment, ANonNumberIsAnErrorNamingTheVariable) {
  set("NCCL_IB_SL", "high");
  EXPECT_CONTAINS(invalidArgument([] { readIbSettings(); }), "NCCL_IB_SL='high' is not an integer");
}

// --- GID choice -----------------------------------------------------------

Gid ipv4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  return Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}
Gid linkLocal(std::uint8_t last) { return Gid{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x1b, 0, 0, 0, 0, 0, last}; }
Gid ipv6Global(std::uint8_t last) {
  return Gid{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last};
}

// A typical RoCE port with one IPv4 address: for each address, a RoCE v1
// and a RoCE v2 entry (as mlx5 fills the table), link-local first.
std::vector<GidEntry> typicalRoceTable() {
  return {{0, linkLocal(1), GidType::RoceV1}, {1, linkLocal(1), GidType::RoceV2},
          {2, ipv4(10, 0, 0, 7), GidType::RoceV1}, {3, ipv4(10, 0, 0, 7), GidType::RoceV2}};
}

TEST(GidChoice, InfiniBandUsesGidZero) {
  const std::vector<GidEntry> table = {{0, linkLocal(9), GidType::InfiniBand}};
  const GidChoice choice = chooseGid("mlx5_0:1", LinkLayer::InfiniBand, table, std::nullopt);
  EXPECT_EQ(choice.index, 0);
  EXPECT_CONTAINS(choice.reason, "mlx5_0:1");
  EXPECT_CONTAINS(choice.reason, "InfiniBand");
  // The RoCE setting does not apply, and the log says so.
  const GidChoice forced = chooseGid("mlx5_0:1", LinkLayer::InfiniBand, table, 3);
  EXPECT_EQ(forced.index, 0);
  EXPECT_CONTAINS(forced.reason, "RoCE only");
}

TEST(GidChoice, RocePrefersRoceV2WithAnIpv4Address) {
  const GidChoice choice = chooseGid("mlx5_0:1", LinkLayer::Ethernet, typicalRoceTable(), std::nullopt);
  EXPECT_EQ(choice.index, 3);
  EXPECT_CONTAINS(choice.reason, "GID 3 (RoCE v2, 10.0.0.7)");
  EXPECT_CONTAINS(choice.reason, "automatically");
  EXPECT_EQ(choice.reason.find(';'), std::string::npos) << "nothing to warn about: " << choice.reason;
}

TEST(GidChoice, TheTableOrderDoesNotMatter) {
  auto table = typicalRoceTable();
  std::reverse(table.begin(), table.end());
  EXPECT_EQ(chooseGid("p", LinkLayer::Ethernet, table, std::nullopt).index, 3);
}

TEST(GidChoice, AnIpv4AddressWinsOverRoceV2WithIpv6) {
  // NCCL's order: the address family first, then the RoCE version.
  const std::vector<GidEntry> table = {{0, linkLocal(1), GidType::RoceV2}, {1, ipv6Global(5), GidType::RoceV2},
                                       {2, ipv4(10, 0, 0, 7), GidType::RoceV1}};
  const GidChoice choice = chooseGid("p", LinkLayer::Ethernet, table, std::nullopt);
  EXPECT_EQ(choice.index, 2);
  EXPECT_CONTAINS(choice.reason, "RoCE v1 does not route");
}

TEST(GidChoice, GlobalIpv6WinsOverLinkLocal) {
  const std::vector<GidEntry> table = {{0, linkLocal(1), GidType::RoceV2}, {1, ipv6Global(5), GidType::RoceV1},
                                       {2, ipv6Global(5), GidType::RoceV2}};
  const GidChoice choice = chooseGid("p", LinkLayer::Ethernet, table, std::nullopt);
  EXPECT_EQ(choice.index, 2);
  EXPECT_CONTAINS(choice.reason, "2001:db8::5");
  EXPECT_CONTAINS(choice.reason, "no IPv4 GID");
}

TEST(GidChoice, ZeroEntriesAreSkipped) {
  const std::vector<GidEntry> table = {{0, Gid{}, GidType::RoceV2}, {1, linkLocal(1), GidType::RoceV1},
                                       {2, Gid{}, GidType::RoceV2}};
  EXPECT_EQ(chooseGid("p", LinkLayer::Ethernet, table, std::nullopt).index, 1);
}

TEST(GidChoice, LinkLocalOnlyWhenNothingElseAndTheReasonSaysSo) {
  const std::vector<GidEntry> table = {{0, linkLocal(1), GidType::RoceV1}, {1, linkLocal(1), GidType::RoceV2}};
  const GidChoice choice = chooseGid("p", LinkLayer::Ethernet, table, std::nullopt);
  EXPECT_EQ(choice.index, 1);  // still RoCE v2 among them
  EXPECT_CONTAINS(choice.reason, "only link-local");
}

TEST(GidChoice, TheLowestIndexWinsATie) {
  const std::vector<GidEntry> table = {{5, ipv4(10, 0, 0, 8), GidType::RoceV2},
                                       {4, ipv4(10, 0, 0, 7), GidType::RoceV2}};
  EXPECT_EQ(chooseGid("p", LinkLayer::Ethernet, table, std::nullopt).index, 4);
}

TEST(GidChoice, APortWithoutAddressesIsAnError) {
  const std::vector<GidEntry> table = {{0, Gid{}, GidType::RoceV1}, {1, Gid{}, GidType::RoceV2}};
  try {
    chooseGid("mlx5_3:1", LinkLayer::Ethernet, table, std::nullopt);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_CONTAINS(error.what(), "mlx5_3:1");
    EXPECT_CONTAINS(error.what(), "no GID");
  }
  EXPECT_THROW(chooseGid("p", LinkLayer::Ethernet, {}, std::nullopt), Error);
}

TEST(GidChoice, TheSettingForcesAnIndex) {
  // Even a link-local RoCE v1 one: the user asked for it.
  const GidChoice choice = chooseGid("p", LinkLayer::Ethernet, typicalRoceTable(), 0);
  EXPECT_EQ(choice.index, 0);
  EXPECT_CONTAINS(choice.reason, "NCCL_IB_GID_INDEX");
}

TEST(GidChoice, AForcedIndexThePortLacksIsAnError) {
  auto table = typicalRoceTable();
  table.push_back({4, Gid{}, GidType::RoceV2});  // an unused slot
  for (int index : {4, 7}) {
    SCOPED_TRACE(index);
    const std::string message = invalidArgument([&] { chooseGid("mlx5_0:1", LinkLayer::Ethernet, table, index); });
    EXPECT_CONTAINS(message, "mlx5_0:1");
    EXPECT_CONTAINS(message, "NCCL_IB_GID_INDEX");
    EXPECT_CONTAINS(message, strCat("no GID ", index));
    EXPECT_CONTAINS(message, "0, 1, 2, 3)");
  }
}

TEST(Gid, Classification) {
  EXPECT_TRUE(isZero(Gid{}));
  EXPECT_FALSE(isZero(linkLocal(1)));
  EXPECT_TRUE(isLinkLocal(linkLocal(1)));
  EXPECT_TRUE(isLinkLocal(Gid{0xfe, 0xbf}));   // the whole /10
  EXPECT_FALSE(isLinkLocal(Gid{0xfe, 0xc0}));  // site-local, outside it
  EXPECT_FALSE(isLinkLocal(ipv4(10, 0, 0, 1)));
  EXPECT_TRUE(isIpv4Mapped(ipv4(10, 0, 0, 1)));
  EXPECT_FALSE(isIpv4Mapped(ipv6Global(1)));
  EXPECT_FALSE(isIpv4Mapped(Gid{}));
  EXPECT_FALSE(isIpv4Mapped(Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0x00, 10, 0, 0, 1}));
  EXPECT_FALSE(isIpv4Mapped(Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 10, 0, 0, 1}));
  EXPECT_EQ(gidText(ipv4(192, 168, 1, 20)), "192.168.1.20");
  EXPECT_EQ(gidText(ipv6Global(5)), "2001:db8::5");
}

// --- fabrics ----------------------------------------------------------------

Gid infinibandGid(std::uint8_t subnetLow, std::uint8_t guidLow) {
  return Gid{0xfe, 0x80, 0, 0, 0, 0, 0, subnetLow, 0x24, 0x8a, 0x07, 0x03, 0x00, 0x5d, 0x07, guidLow};
}

TEST(Fabric, InfinibandPortsOnOneSubnetShareIt) {
  EXPECT_TRUE(shareFabric({LinkLayer::InfiniBand, infinibandGid(0, 1)}, {LinkLayer::InfiniBand, infinibandGid(0, 2)}));
}

TEST(Fabric, InfinibandPortsOnDifferentSubnetsDoNot) {
  EXPECT_FALSE(
      shareFabric({LinkLayer::InfiniBand, infinibandGid(0, 1)}, {LinkLayer::InfiniBand, infinibandGid(1, 2)}));
  Gid other = infinibandGid(0, 2);
  other[0] = 0xfd;  // the first byte of the prefix counts too
  EXPECT_FALSE(shareFabric({LinkLayer::InfiniBand, infinibandGid(0, 1)}, {LinkLayer::InfiniBand, other}));
}

TEST(Fabric, EthernetPortsAreAssumedToReachEachOther) {
  // Whatever their GIDs: IP routing, which they do not show, decides.
  EXPECT_TRUE(shareFabric({LinkLayer::Ethernet, ipv4(10, 0, 0, 1)}, {LinkLayer::Ethernet, ipv4(192, 168, 0, 1)}));
  EXPECT_TRUE(shareFabric({LinkLayer::Ethernet, ipv6Global(1)}, {LinkLayer::Ethernet, linkLocal(2)}));
}

TEST(Fabric, InfinibandNeverReachesEthernet) {
  EXPECT_FALSE(shareFabric({LinkLayer::InfiniBand, infinibandGid(0, 1)}, {LinkLayer::Ethernet, infinibandGid(0, 1)}));
  EXPECT_FALSE(shareFabric({LinkLayer::Ethernet, infinibandGid(0, 1)}, {LinkLayer::InfiniBand, infinibandGid(0, 1)}));
}

}  // namespace
}  // namespace hora::transport::rdma::verbs
