#include "topology/bus_id.h"

#include <gtest/gtest.h>

namespace hora::topology {
namespace {

TEST(BusIdTest, EverySpellingBecomesOne) {
  EXPECT_EQ(canonicalBusId("0000:07:00.0"), "0000:07:00.0");
  EXPECT_EQ(canonicalBusId("00000000:07:00.0"), "0000:07:00.0");  // NVML's 8-digit domain
  EXPECT_EQ(canonicalBusId("07:00.0"), "0000:07:00.0");           // no domain
  EXPECT_EQ(canonicalBusId("0000:3B:00.0"), "0000:3b:00.0");      // upper case
  EXPECT_EQ(canonicalBusId("0001:00:00"), "0001:00:00.0");        // no function
  EXPECT_EQ(canonicalBusId("ffff:ff:01.0"), "ffff:ff:01.0");      // Hyper-V's virtual switches
  EXPECT_EQ(canonicalBusId("10000:01:02.3"), "10000:01:02.3");    // VMD domains are wider
}

TEST(BusIdTest, RejectsWhatIsNoBusId) {
  for (const char* bad : {"", "eth0", "0000:07", "0000:07:00.8", "0000:07:20.0", "zz:00.0", "0000:100:00.0",
                          "0000:07:00.0.1", "a:b:c:d"}) {
    EXPECT_FALSE(canonicalBusId(bad).has_value()) << bad;
  }
}

TEST(BusIdTest, ParsesFields) {
  auto address = parseBusId("0002:81:1f.7");
  ASSERT_TRUE(address.has_value());
  EXPECT_EQ(address->domain, 2u);
  EXPECT_EQ(address->bus, 0x81u);
  EXPECT_EQ(address->device, 0x1fu);
  EXPECT_EQ(address->function, 7u);
}

}  // namespace
}  // namespace hora::topology
