// The libfabric domain a rank opens first (ofi/domain_choice.h), by name:
// a machine with several NICs of one provider is not here, so the choice
// is checked on the names such machines give.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "transport/rdma/ofi/domain_choice.h"

namespace hora::transport::rdma::ofi {
namespace {

// What chooseInfo does with the preferences: the most wanted, libfabric's
// order among equals.
std::string chosen(const std::vector<std::string>& offered, const std::string& preferred,
                   const std::vector<std::string>& nearest) {
  return *std::min_element(offered.begin(), offered.end(), [&](const std::string& a, const std::string& b) {
    return domainPreference(a, preferred, nearest) < domainPreference(b, preferred, nearest);
  });
}

TEST(OfiDomainChoice, ADomainIsOnTheNicItIsNamedAfter) {
  EXPECT_TRUE(domainOnNic("mlx5_0", "mlx5_0"));
  EXPECT_TRUE(domainOnNic("rdmap16s27-rdm", "rdmap16s27")) << "efa's reliable datagram domain";
  EXPECT_FALSE(domainOnNic("mlx5_10", "mlx5_1")) << "a prefix that is another NIC's name";
  EXPECT_FALSE(domainOnNic("mlx5_0", ""));
  EXPECT_FALSE(domainOnNic("eth0", "mlx5_0"));
}

// Four EFA NICs, libfabric listing them in bus order; a rank bound to the
// third one's NUMA node takes that one, not the first.
TEST(OfiDomainChoice, ARankTakesTheDomainOfItsNearestNic) {
  const std::vector<std::string> efa{"rdmap16s27-rdm", "rdmap32s27-rdm", "rdmap144s27-rdm", "rdmap160s27-rdm"};
  EXPECT_EQ(chosen(efa, "eth0", {"rdmap144s27", "rdmap160s27"}), "rdmap144s27-rdm");
  EXPECT_EQ(chosen(efa, "eth0", {}), "rdmap16s27-rdm") << "nothing known: libfabric's first";
  EXPECT_EQ(chosen(efa, "rdmap32s27-rdm", {"rdmap144s27"}), "rdmap32s27-rdm") << "HORA_OFI_DOMAIN wins";
}

// tcp names its domains after interfaces: the bootstrap's interface first,
// loopback only when there is nothing else.
TEST(OfiDomainChoice, TcpTakesTheBootstrapInterfaceAndLoopbackLast) {
  EXPECT_EQ(chosen({"lo", "eth0", "eth1"}, "eth1", {}), "eth1");
  EXPECT_EQ(chosen({"lo", "eth0"}, "", {}), "eth0");
  EXPECT_EQ(chosen({"lo"}, "eth0", {}), "lo");
  EXPECT_EQ(chosen({"lo", "eth0"}, "lo", {}), "lo") << "asked for";
}

}  // namespace
}  // namespace hora::transport::rdma::ofi
