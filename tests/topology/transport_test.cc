// Transport choice: the rules table, the overrides, and reading them from
// the environment.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hora/communicator.h"
#include "hora_config.h"
#include "synthetic_machines.h"
#include "topology_test_support.h"

namespace hora::topology {
namespace {

using testing::fixture;
using testing::ScopedEnv;
using testing::TempFile;
using ::testing::HasSubstr;

class TransportTest : public ::testing::Test {
 protected:
  TransportTest() : file_(testing::kMixedMachine), system_(loadSystemFromFile(file_.path())) {}

  // A rank on host 1 or 2 driving GPU number `gpu` (-1: none).
  RankPlacement rank(int number, int gpu, std::uint64_t host = 1, bool infiniband = true) const {
    RankPlacement p;
    p.rank = number;
    p.hostHash = host;
    if (gpu >= 0) p.gpuBusId = system_.devices()[testing::gpuIndex(system_, gpu)].busId;
    p.hasInfiniband = infiniband;
    return p;
  }

  TempFile file_;
  System system_;
};

struct Case {
  const char* what;
  int gpuA, gpuB;                       // -1: no GPU
  std::uint64_t hostB;                  // rank A is on host 1
  bool ibA, ibB;
  void (*tweak)(TransportPolicy&);      // nullptr: defaults
  TransportKind expected;
  const char* reasonHas;
};

void none(TransportPolicy&) {}

TEST_F(TransportTest, RulesTable) {
  const std::vector<Case> cases = {
      {"PIX pair", 0, 1, 1, true, true, none, TransportKind::P2p, "PIX"},
      {"PXB pair", 0, 2, 1, true, true, none, TransportKind::P2p, "PXB"},
      {"PHB pair is beyond the default level", 0, 3, 1, true, true, none, TransportKind::Shm,
       "beyond the P2P level PXB"},
      {"PHB pair with P2P level PHB", 0, 3, 1, true, true, [](TransportPolicy& p) { p.p2pLevel = PathClass::Phb; },
       TransportKind::P2p, "PHB"},
      {"SYS pair with P2P level NODE", 0, 4, 1, true, true, [](TransportPolicy& p) { p.p2pLevel = PathClass::Node; },
       TransportKind::Shm, "SYS"},
      {"SYS pair with P2P level SYS", 0, 4, 1, true, true, [](TransportPolicy& p) { p.p2pLevel = PathClass::Sys; },
       TransportKind::P2p, "SYS"},
      {"PIX pair with P2P level NVL", 0, 1, 1, true, true, [](TransportPolicy& p) { p.p2pLevel = PathClass::Nvl; },
       TransportKind::Shm, "beyond the P2P level NVL"},
      {"one rank without GPU", 0, -1, 1, true, true, none, TransportKind::Shm, "rank 1 has no GPU"},
      {"both on one GPU", 2, 2, 1, true, true, none, TransportKind::P2p, "both ranks drive GPU 0000:15:00.0"},
      {"P2P disabled", 0, 1, 1, true, true, [](TransportPolicy& p) { p.p2pDisabled = true; }, TransportKind::Shm,
       "P2P disabled"},
      {"SHM disabled, p2p still possible", 0, 1, 1, true, true, [](TransportPolicy& p) { p.shmDisabled = true; },
       TransportKind::P2p, "PIX"},
      {"SHM disabled without p2p: the network (ib)", 0, 3, 1, true, true,
       [](TransportPolicy& p) { p.shmDisabled = true; }, TransportKind::Ib, "SHM disabled"},
      {"SHM disabled without p2p or IB: tcp", -1, -1, 1, false, false,
       [](TransportPolicy& p) { p.shmDisabled = true; }, TransportKind::Tcp, "SHM disabled"},
      {"different hosts with RDMA NICs", 0, 0, 2, true, true, none, TransportKind::Ib, "different hosts"},
      {"different hosts, one without RDMA NIC", 0, 0, 2, true, false, none, TransportKind::Tcp,
       "no usable RDMA NIC on rank 1's host"},
      {"different hosts, IB disabled", 0, 0, 2, true, true, [](TransportPolicy& p) { p.ibDisabled = true; },
       TransportKind::Tcp, "IB disabled (IB_DISABLE=1)"},
      {"different hosts, NCCL_NET=Socket", 0, 0, 2, true, true,
       [](TransportPolicy& p) {
         p.ibDisabled = true;
         p.ibDisabledBy = "NET=Socket";
       },
       TransportKind::Tcp, "IB disabled (NET=Socket)"},
      {"different hosts without GPUs", -1, -1, 2, true, true, none, TransportKind::Ib, "both hosts"},
      {"forced tcp on one host", 0, 1, 1, true, true, [](TransportPolicy& p) { p.forced = TransportKind::Tcp; },
       TransportKind::Tcp, "HORA_TRANSPORT=tcp (else: p2p"},
      {"forced shm across hosts cannot be", 0, 0, 2, true, true,
       [](TransportPolicy& p) { p.forced = TransportKind::Shm; }, TransportKind::Ib,
       "HORA_TRANSPORT=shm cannot connect ranks 0 and 1 (the ranks are on different hosts)"},
      {"forced p2p beyond the P2P level", 0, 4, 1, true, true,
       [](TransportPolicy& p) { p.forced = TransportKind::P2p; }, TransportKind::P2p, "HORA_TRANSPORT=p2p"},
      {"forced p2p without a GPU cannot be", 0, -1, 1, true, true,
       [](TransportPolicy& p) { p.forced = TransportKind::P2p; }, TransportKind::Shm, "cannot connect"},
      {"forced p2p while P2P is disabled cannot be", 0, 1, 1, true, true,
       [](TransportPolicy& p) {
         p.forced = TransportKind::P2p;
         p.p2pDisabled = true;
       },
       TransportKind::Shm, "P2P is disabled"},
      {"forced ib without an RDMA NIC cannot be", 0, 0, 2, false, true,
       [](TransportPolicy& p) { p.forced = TransportKind::Ib; }, TransportKind::Tcp, "no usable RDMA NIC"},
      {"forced ib on one host", 0, 1, 1, true, true, [](TransportPolicy& p) { p.forced = TransportKind::Ib; },
       TransportKind::Ib, "HORA_TRANSPORT=ib"},
  };
  for (const Case& c : cases) {
    TransportPolicy policy;
    c.tweak(policy);
    TransportChoice choice = chooseTransport(rank(0, c.gpuA, 1, c.ibA), rank(1, c.gpuB, c.hostB, c.ibB), system_, policy);
    EXPECT_EQ(transportName(choice.kind), transportName(c.expected)) << c.what << ": " << choice.reason;
    EXPECT_THAT(choice.reason, HasSubstr(c.reasonHas)) << c.what;
    // The reason is one line for the log.
    EXPECT_EQ(choice.reason.find('\n'), std::string::npos) << c.what;
  }
}

// ofi: between hosts when both ranks have a libfabric device and ib is
// not possible; on one host only when forced.
TEST_F(TransportTest, OfiRules) {
  auto withOfi = [&](int number, std::uint64_t host, bool infiniband, bool ofi) {
    RankPlacement p = rank(number, -1, host, infiniband);
    p.hasOfi = ofi;
    return p;
  };
  TransportPolicy defaults;
  // ib wins where both hosts have it.
  EXPECT_EQ(chooseTransport(withOfi(0, 1, true, true), withOfi(1, 2, true, true), system_, defaults).kind,
            TransportKind::Ib);
  // Otherwise ofi, and the reason says why not ib.
  TransportChoice choice = chooseTransport(withOfi(0, 1, false, true), withOfi(1, 2, false, true), system_, defaults);
  EXPECT_EQ(choice.kind, TransportKind::Ofi);
  EXPECT_THAT(choice.reason, HasSubstr("no usable RDMA NIC on rank 0's host"));
  EXPECT_THAT(choice.reason, HasSubstr("libfabric device"));
  // One rank without: tcp.
  EXPECT_EQ(chooseTransport(withOfi(0, 1, false, true), withOfi(1, 2, false, false), system_, defaults).kind,
            TransportKind::Tcp);
  // Disabled: tcp.
  TransportPolicy noOfi;
  noOfi.ofiDisabled = true;
  EXPECT_EQ(chooseTransport(withOfi(0, 1, false, true), withOfi(1, 2, false, true), system_, noOfi).kind,
            TransportKind::Tcp);
  // Same host: shm, unless ofi is forced.
  EXPECT_EQ(chooseTransport(withOfi(0, 1, false, true), withOfi(1, 1, false, true), system_, defaults).kind,
            TransportKind::Shm);
  TransportPolicy forced;
  forced.forced = TransportKind::Ofi;
  EXPECT_EQ(chooseTransport(withOfi(0, 1, false, true), withOfi(1, 1, false, true), system_, forced).kind,
            TransportKind::Ofi);
  choice = chooseTransport(withOfi(0, 1, false, true), withOfi(1, 1, false, false), system_, forced);
  EXPECT_EQ(choice.kind, TransportKind::Shm);
  EXPECT_THAT(choice.reason, HasSubstr("rank 1 has no libfabric device"));
}

// ib only between ports of one fabric: the same link layer, and on
// InfiniBand the same subnet; otherwise the next network transport, with
// the reason. Placements that do not say (Unknown) are taken to share one.
TEST_F(TransportTest, IbOnlyWithinOneFabric) {
  using Layer = RankPlacement::LinkLayer;
  auto port = [&](int number, Layer layer, std::uint64_t subnet) {
    RankPlacement p = rank(number, -1, static_cast<std::uint64_t>(number + 1), true);
    p.ibLinkLayer = layer;
    p.ibSubnet = subnet;
    return p;
  };
  TransportPolicy defaults;
  EXPECT_EQ(chooseTransport(port(0, Layer::InfiniBand, 0xfe80), port(1, Layer::InfiniBand, 0xfe80), system_, defaults).kind,
            TransportKind::Ib);
  TransportChoice choice =
      chooseTransport(port(0, Layer::InfiniBand, 0xfe80), port(1, Layer::InfiniBand, 0xfe81), system_, defaults);
  EXPECT_EQ(choice.kind, TransportKind::Tcp);
  EXPECT_THAT(choice.reason, HasSubstr("different fabrics"));
  EXPECT_EQ(chooseTransport(port(0, Layer::InfiniBand, 1), port(1, Layer::Ethernet, 1), system_, defaults).kind,
            TransportKind::Tcp);
  // RoCE: IP routing decides, which the placement cannot tell: assumed.
  EXPECT_EQ(chooseTransport(port(0, Layer::Ethernet, 5), port(1, Layer::Ethernet, 6), system_, defaults).kind,
            TransportKind::Ib);
  EXPECT_EQ(chooseTransport(port(0, Layer::Unknown, 0), port(1, Layer::InfiniBand, 7), system_, defaults).kind,
            TransportKind::Ib);
  TransportPolicy forced;
  forced.forced = TransportKind::Ib;
  choice = chooseTransport(port(0, Layer::InfiniBand, 0xfe80), port(1, Layer::InfiniBand, 0xfe81), system_, forced);
  EXPECT_EQ(choice.kind, TransportKind::Tcp);
  EXPECT_THAT(choice.reason, HasSubstr("HORA_TRANSPORT=ib cannot connect ranks 0 and 1 (their RDMA ports are on different fabrics)"));
}

TEST(TransportPolicyTest, NcclNetChoosesTheNetwork) {
  ScopedEnv a("HORA_NET", std::nullopt), b("HORA_IB_DISABLE", std::nullopt), c("NCCL_IB_DISABLE", std::nullopt);
  ScopedEnv d("HORA_OFI_DISABLE", std::nullopt);
  {
    ScopedEnv net("NCCL_NET", "Socket");
    TransportPolicy policy = TransportPolicy::fromEnvironment();
    EXPECT_TRUE(policy.ibDisabled);
    EXPECT_TRUE(policy.ofiDisabled);
  }
  {
    ScopedEnv net("NCCL_NET", "IB");
    TransportPolicy policy = TransportPolicy::fromEnvironment();
    EXPECT_FALSE(policy.ibDisabled);
    EXPECT_TRUE(policy.ofiDisabled);
  }
  {
    ScopedEnv net("NCCL_NET", "ofi");
    TransportPolicy policy = TransportPolicy::fromEnvironment();
    EXPECT_TRUE(policy.ibDisabled);
    EXPECT_FALSE(policy.ofiDisabled);
  }
  for (const char* name : {"AWS Libfabric", "Libfabric"}) {
    ScopedEnv net("NCCL_NET", name);  // what scripts for aws-ofi-nccl set
    TransportPolicy policy = TransportPolicy::fromEnvironment();
    EXPECT_TRUE(policy.ibDisabled) << name;
    EXPECT_FALSE(policy.ofiDisabled) << name;
    EXPECT_EQ(policy.ibDisabledBy, std::string("NET=") + name);
  }
  {
    ScopedEnv net("NCCL_NET", "carrier pigeon");
    try {
      TransportPolicy::fromEnvironment();
      FAIL() << "expected an error";
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
      EXPECT_THAT(error.what(), HasSubstr("'carrier pigeon' (HORA_NET / NCCL_NET) is not one of IB, OFI (or Libfabric, AWS Libfabric), Socket"));
    }
  }
}

TEST_F(TransportTest, ChoiceIsSymmetric) {
  for (int a = -1; a < 5; ++a)
    for (int b = -1; b < 5; ++b)
      EXPECT_EQ(chooseTransport(rank(0, a), rank(1, b), system_, {}).kind,
                chooseTransport(rank(1, b), rank(0, a), system_, {}).kind)
          << a << "," << b;
}

TEST_F(TransportTest, GpuMissingFromTheTopologyMeansShm) {
  RankPlacement stranger = rank(1, -1);
  stranger.gpuBusId = "0000:99:00.0";
  auto choice = chooseTransport(rank(0, 0), stranger, system_, {});
  EXPECT_EQ(choice.kind, TransportKind::Shm);
  EXPECT_THAT(choice.reason, HasSubstr("GPU 0000:99:00.0 is not in the topology"));
}

TEST_F(TransportTest, NvlinkPairsUseP2pAndSocketsApartUseShm) {
  System power8 = loadSystemFromFile(fixture("hwloc/power8gpudistances.hwloc-2.9.0.xml"));
  auto ranks = testing::rankPerGpu(power8);
  EXPECT_EQ(chooseTransport(ranks[0], ranks[1], power8, {}).kind, TransportKind::P2p);
  EXPECT_THAT(chooseTransport(ranks[0], ranks[1], power8, {}).reason, HasSubstr("NVL, ~40 GB/s"));
  EXPECT_EQ(chooseTransport(ranks[1], ranks[2], power8, {}).kind, TransportKind::Shm);
}

TEST_F(TransportTest, APeerIsNotItself) {
  try {
    chooseTransport(rank(3, 0), rank(3, 1), system_, {});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("rank 3 cannot be its own peer"));
  }
}

TEST(TransportPolicyTest, ReadsEnvironmentHoraNamesFirst) {
  ScopedEnv a("HORA_P2P_DISABLE", std::nullopt), b("NCCL_P2P_DISABLE", "1");
  ScopedEnv c("HORA_SHM_DISABLE", "1"), d("NCCL_SHM_DISABLE", "0");
  ScopedEnv e("HORA_IB_DISABLE", std::nullopt), f("NCCL_IB_DISABLE", std::nullopt);
  ScopedEnv g("HORA_P2P_LEVEL", "sys"), h("NCCL_P2P_LEVEL", "PIX");
  ScopedEnv i("HORA_TRANSPORT", "IB");
  TransportPolicy policy = TransportPolicy::fromEnvironment();
  EXPECT_TRUE(policy.p2pDisabled);
  EXPECT_TRUE(policy.shmDisabled);  // HORA_SHM_DISABLE=1 wins over NCCL_SHM_DISABLE=0
  EXPECT_FALSE(policy.ibDisabled);
  EXPECT_EQ(policy.p2pLevel, PathClass::Sys);
  EXPECT_EQ(policy.forced, TransportKind::Ib);
}

// Every value NCCL 2.28 takes for NCCL_P2P_LEVEL starts a job here too.
TEST(TransportPolicyTest, NcclsOtherP2pLevelsAreRead) {
  EXPECT_EQ(p2pLevelOf("NVB"), PathClass::Nvl);
  EXPECT_EQ(p2pLevelOf("C2C"), PathClass::Nvl);
  EXPECT_EQ(p2pLevelOf("P2C"), PathClass::Pxb);
  EXPECT_EQ(p2pLevelOf("pxn"), PathClass::Pxb);
  EXPECT_EQ(p2pLevelOf("0"), PathClass::Loc);
  EXPECT_EQ(p2pLevelOf("2"), PathClass::Pxb);
  EXPECT_EQ(p2pLevelOf("4"), PathClass::Sys);
  EXPECT_EQ(p2pLevelOf("5"), PathClass::Sys);
  EXPECT_EQ(p2pLevelOf("NODE"), PathClass::Node);
  EXPECT_FALSE(p2pLevelOf("NET"));
  EXPECT_FALSE(p2pLevelOf("-1"));
  EXPECT_FALSE(p2pLevelOf(""));
  ScopedEnv a("HORA_P2P_LEVEL", std::nullopt), b("NCCL_P2P_LEVEL", "PXN");
  EXPECT_EQ(TransportPolicy::fromEnvironment().p2pLevel, PathClass::Pxb);
}

// NCCL's PHB allows P2P within a NUMA node: its model has no NODE, two host
// bridges of one CPU meet as PHB there. So PHB (and the old 3) take in
// hora's NODE pairs, which only hwloc's tree tells apart.
TEST(TransportPolicyTest, PhbMeansWhatItMeansInNccl) {
  EXPECT_EQ(p2pLevelOf("PHB"), PathClass::Node);
  EXPECT_EQ(p2pLevelOf("phb"), PathClass::Node);
  EXPECT_EQ(p2pLevelOf("3"), PathClass::Node);
  ScopedEnv a("HORA_P2P_LEVEL", std::nullopt), b("NCCL_P2P_LEVEL", "PHB");
  TransportPolicy policy = TransportPolicy::fromEnvironment();
  EXPECT_EQ(policy.p2pLevel, PathClass::Node);
  EXPECT_EQ(policy.p2pLevelSetBy, "P2P_LEVEL=PHB");
}

// The DGX-2 as hwloc sees it, without its NVLinks: GPUs 0 and 4 hang off
// two host bridges of one socket (NODE).
std::string dgx2WithoutNvLink() {
  std::string text = testing::readText(fixture("hwloc/nvidiaDGX2.hwloc-2.12.2.xml"));
  const std::size_t begin = text.find("<distances2hetero");
  const std::string endTag = "</distances2hetero>";
  const std::size_t end = text.find(endTag, begin);
  EXPECT_NE(end, std::string::npos);
  return text.erase(begin, end + endTag.size() - begin);
}

TEST(TransportPolicyTest, PhbLetsHwlocsNodePairsUseP2p) {
  TempFile file(dgx2WithoutNvLink());
  System dgx2 = loadSystemFromFile(file.path());
  ASSERT_EQ(testing::gpuPath(dgx2, 0, 4), PathClass::Node);
  auto ranks = testing::rankPerGpu(dgx2);
  ScopedEnv a("HORA_P2P_LEVEL", std::nullopt), d("HORA_P2P_DISABLE", std::nullopt), e("NCCL_P2P_DISABLE", std::nullopt);
  ScopedEnv t("HORA_TRANSPORT", std::nullopt);
  {
    ScopedEnv b("NCCL_P2P_LEVEL", "PHB");
    EXPECT_EQ(chooseTransport(ranks[0], ranks[4], dgx2).kind, TransportKind::P2p);
    EXPECT_EQ(chooseTransport(ranks[0], ranks[8], dgx2).kind, TransportKind::Shm);  // the other socket
  }
  {
    ScopedEnv b("NCCL_P2P_LEVEL", "PXB");
    TransportChoice choice = chooseTransport(ranks[0], ranks[4], dgx2);
    EXPECT_EQ(choice.kind, TransportKind::Shm);
    EXPECT_THAT(choice.reason, HasSubstr("connect through NODE"));
    EXPECT_THAT(choice.reason, HasSubstr("beyond the P2P level PXB (P2P_LEVEL=PXB)"));
  }
}

// NCCL disables P2P and SHM only for 1 (NCCL_P2P_DISABLE=2 leaves P2P on),
// and IB for any other number than 0.
TEST(TransportPolicyTest, DisableVariablesReadAsNcclReadsThem) {
  ScopedEnv a("HORA_P2P_DISABLE", std::nullopt), b("HORA_SHM_DISABLE", std::nullopt), c("HORA_IB_DISABLE", std::nullopt);
  ScopedEnv t("HORA_TRANSPORT", std::nullopt), l("HORA_P2P_LEVEL", std::nullopt), n("NCCL_P2P_LEVEL", std::nullopt);
  {
    ScopedEnv p("NCCL_P2P_DISABLE", "2"), s("NCCL_SHM_DISABLE", "2"), i("NCCL_IB_DISABLE", "2");
    TransportPolicy policy = TransportPolicy::fromEnvironment();
    EXPECT_FALSE(policy.p2pDisabled);
    EXPECT_FALSE(policy.shmDisabled);
    EXPECT_TRUE(policy.ibDisabled);
    EXPECT_EQ(policy.ibDisabledBy, "IB_DISABLE=2");
  }
  {
    ScopedEnv p("NCCL_P2P_DISABLE", "1"), s("NCCL_SHM_DISABLE", "1"), i("NCCL_IB_DISABLE", "0");
    TransportPolicy policy = TransportPolicy::fromEnvironment();
    EXPECT_TRUE(policy.p2pDisabled);
    EXPECT_TRUE(policy.shmDisabled);
    EXPECT_FALSE(policy.ibDisabled);
  }
}

TEST(TransportPolicyTest, DefaultsWhenNothingIsSet) {
  ScopedEnv a("HORA_P2P_DISABLE", std::nullopt), b("NCCL_P2P_DISABLE", std::nullopt);
  ScopedEnv c("HORA_SHM_DISABLE", std::nullopt), d("NCCL_SHM_DISABLE", std::nullopt);
  ScopedEnv e("HORA_IB_DISABLE", std::nullopt), f("NCCL_IB_DISABLE", std::nullopt);
  ScopedEnv g("HORA_P2P_LEVEL", std::nullopt), h("NCCL_P2P_LEVEL", "NODE");
  ScopedEnv i("HORA_TRANSPORT", std::nullopt);
  TransportPolicy policy = TransportPolicy::fromEnvironment();
  EXPECT_FALSE(policy.p2pDisabled || policy.shmDisabled || policy.ibDisabled);
  EXPECT_EQ(policy.p2pLevel, PathClass::Node);  // NCCL's name is read too
  EXPECT_FALSE(policy.forced.has_value());
}

TEST(TransportPolicyTest, BadValuesNameTheVariable) {
  auto errorOf = [] {
    try {
      TransportPolicy::fromEnvironment();
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument);
      return std::string(error.what());
    }
    return std::string();
  };
  {
    ScopedEnv level("HORA_P2P_LEVEL", "PCI"), t("HORA_TRANSPORT", std::nullopt);
    EXPECT_THAT(errorOf(), HasSubstr("P2P level 'PCI' (HORA_P2P_LEVEL / NCCL_P2P_LEVEL)"));
  }
  {
    ScopedEnv level("HORA_P2P_LEVEL", std::nullopt), n("NCCL_P2P_LEVEL", std::nullopt);
    ScopedEnv t("HORA_TRANSPORT", "pigeon");
    EXPECT_THAT(errorOf(), HasSubstr("HORA_TRANSPORT='pigeon' is not one of p2p, shm, ib, ofi, tcp"));
  }
  {
    ScopedEnv t("HORA_TRANSPORT", std::nullopt), h("HORA_IB_DISABLE", std::nullopt), n("NCCL_IB_DISABLE", "yes");
    EXPECT_THAT(errorOf(), HasSubstr("NCCL_IB_DISABLE"));
  }
}

TEST_F(TransportTest, EnvironmentOverloadAppliesTheVariables) {
  ScopedEnv a("HORA_P2P_DISABLE", "1"), t("HORA_TRANSPORT", std::nullopt), l("HORA_P2P_LEVEL", std::nullopt);
  ScopedEnv n("NCCL_P2P_LEVEL", std::nullopt), s("HORA_SHM_DISABLE", std::nullopt), s2("NCCL_SHM_DISABLE", std::nullopt);
  EXPECT_EQ(chooseTransport(rank(0, 0), rank(1, 1), system_).kind, TransportKind::Shm);
}

TEST(LocalPlacementTest, CarriesFingerprintCanonicalBusIdAndUsableRdma) {
  System ndv4 = loadSystemFromFile(fixture("nccl-topo/azure-ndv4-topo.xml"));
  RankPlacement p = localPlacement(5, 42, "0001:00:00.0", ndv4);
  EXPECT_EQ(p.rank, 5);
  EXPECT_EQ(p.hostHash, 42u);
  EXPECT_EQ(p.topologyFingerprint, ndv4.fingerprint());
  EXPECT_EQ(p.hasInfiniband, static_cast<bool>(HORA_HAVE_IBVERBS));  // the NICs are InfiniBand
  EXPECT_EQ(localPlacement(0, 1, "00000001:00:00.0", ndv4).gpuBusId, "0001:00:00.0");
  System ncv4 = loadSystemFromFile(fixture("nccl-topo/azure-ncv4-topo.xml"));
  EXPECT_FALSE(localPlacement(0, 1, "", ncv4).hasInfiniband);  // Ethernet only
}

TEST(TransportNamesTest, RoundTrip) {
  for (TransportKind kind :
       {TransportKind::P2p, TransportKind::Shm, TransportKind::Ib, TransportKind::Tcp, TransportKind::Ofi})
    EXPECT_EQ(parseTransportName(transportName(kind)), kind);
  EXPECT_EQ(parseTransportName("TCP"), TransportKind::Tcp);
  EXPECT_FALSE(parseTransportName("nvls").has_value());
}

}  // namespace
}  // namespace hora::topology
