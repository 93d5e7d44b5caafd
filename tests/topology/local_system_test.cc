// This host through hwloc, and the environment variables that replace it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hora/communicator.h"
#include "topology_test_support.h"

namespace hora::topology {
namespace {

using testing::fixture;
using testing::ScopedEnv;
using ::testing::HasSubstr;

TEST(LocalSystemTest, DiscoversThisHost) {
  System sys = discoverLocalSystem();
  EXPECT_EQ(sys.source(), "hwloc (this host)");
  EXPECT_GE(sys.cpu().numaNodes, 1);
  EXPECT_GE(sys.cpu().hardwareThreads, 1);
  EXPECT_GE(sys.cpu().cores, 1);
  // Whatever was found, the path matrix is complete and consistent.
  const int n = static_cast<int>(sys.devices().size());
  for (int a = 0; a < n; ++a) {
    EXPECT_EQ(sys.pathBetween(a, a), PathClass::Loc);
    for (int b = 0; b < n; ++b) EXPECT_EQ(sys.pathBetween(a, b), sys.pathBetween(b, a));
  }
  // Ranks on this host always find a transport and a ring.
  std::vector<RankPlacement> ranks;
  for (int r = 0; r < 3; ++r) ranks.push_back(localPlacement(r, 7, "", sys));
  EXPECT_EQ(chooseTransport(ranks[0], ranks[1], sys, {}).kind, TransportKind::Shm);
  EXPECT_THAT(ringOrder(ranks, &sys), ::testing::ElementsAre(0, 1, 2));
}

TEST(LocalSystemTest, TopologyFileVariablesReplaceDiscovery) {
  {
    ScopedEnv hora("HORA_TOPO_FILE", fixture("nccl-topo/azure-ndv5-topo.xml"));
    ScopedEnv nvswitch("HORA_TOPO_NVSWITCH", std::nullopt);
    System sys = loadSystem();
    EXPECT_THAT(sys.source(), HasSubstr("azure-ndv5-topo.xml"));
    EXPECT_EQ(sys.devicesOfKind(DeviceKind::Gpu).size(), 8u);
    EXPECT_EQ(testing::gpuPath(sys, 0, 1), PathClass::Phb);
  }
  {
    ScopedEnv hora("HORA_TOPO_FILE", std::nullopt);
    ScopedEnv nccl("NCCL_TOPO_FILE", fixture("nccl-topo/azure-ndv5-topo.xml"));
    ScopedEnv nvswitch("HORA_TOPO_NVSWITCH", "1");
    System sys = loadSystem();
    EXPECT_EQ(testing::gpuPath(sys, 0, 7), PathClass::Nvl);
  }
  {
    ScopedEnv hora("HORA_TOPO_FILE", fixture("absent.xml"));
    try {
      loadSystem();
      FAIL() << "expected an error";
    } catch (const Error& error) {
      EXPECT_THAT(error.what(), HasSubstr("absent.xml"));
    }
  }
}

}  // namespace
}  // namespace hora::topology
