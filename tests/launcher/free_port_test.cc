#include "free_port.h"

#include <gtest/gtest.h>

#include <fstream>

namespace hora::launcher {
namespace {

TEST(FreePortTest, PicksOutsideTheEphemeralRange) {
  const PortRange ephemeral = ephemeral_port_range();
  for (int i = 0; i < 20; ++i) {
    const int port = pick_free_port(ephemeral);
    EXPECT_TRUE(port < ephemeral.low || port > ephemeral.high) << port;
    EXPECT_GT(port, 0);
  }
}

TEST(FreePortTest, ReadsTheRangeAndFallsBackOnGarbage) {
  const std::string path = ::testing::TempDir() + "hora_port_range";
  std::ofstream(path) << "40000\t50000\n";
  EXPECT_EQ(ephemeral_port_range(path).low, 40000);
  EXPECT_EQ(ephemeral_port_range(path).high, 50000);
  std::ofstream(path) << "garbage";
  EXPECT_EQ(ephemeral_port_range(path).low, 32768);
  EXPECT_EQ(ephemeral_port_range(path + ".missing").high, 60999);
}

TEST(FreePortTest, AWholeRangeOfEphemeralPortsStillGivesAPort) {
  EXPECT_GT(pick_free_port({1, 65535}), 0);  // no room outside: asks the kernel
}

}  // namespace
}  // namespace hora::launcher
