// What makes two processes one host to hora: the host hash
// (bootstrap::localHostHash), and NCCL_HOSTID, which overrides the
// machine's name and boot id in it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

#include "bootstrap/bootstrap.h"

namespace hora::bootstrap {
namespace {

std::uint64_t hashWith(const char* variable, const char* id) {
  ::setenv(variable, id, 1);
  const std::uint64_t hash = localHostHash();
  ::unsetenv(variable);
  return hash;
}

TEST(HostHash, IsStableOnOneMachine) { EXPECT_EQ(localHostHash(), localHostHash()); }

// Processes of one machine given different ids are different hosts (their
// ranks then use the network transports); the same id, one host.
TEST(HostHash, NcclHostIdNamesTheHost) {
  const std::uint64_t machine = localHostHash();
  const std::uint64_t a = hashWith("NCCL_HOSTID", "node-a");
  const std::uint64_t b = hashWith("NCCL_HOSTID", "node-b");
  EXPECT_NE(a, b);
  EXPECT_NE(a, machine);
  EXPECT_EQ(hashWith("NCCL_HOSTID", "node-a"), a);
  EXPECT_EQ(hashWith("HORA_HOSTID", "node-a"), a) << "HORA_HOSTID is the same setting";
  EXPECT_EQ(localHostHash(), machine) << "unset again: the machine's own";
}

}  // namespace
}  // namespace hora::bootstrap
