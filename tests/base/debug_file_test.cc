// HORA_DEBUG_FILE / NCCL_DEBUG_FILE: the path patterns NCCL expands.
#include <gtest/gtest.h>

#include "base/log.h"

namespace hora::log {
namespace {

TEST(DebugFile, HostAndPidAreExpandedAsNcclExpandsThem) {
  EXPECT_EQ(expandDebugFilePath("/tmp/nccl.%h.%p.log", "node7", 4242), "/tmp/nccl.node7.4242.log");
  EXPECT_EQ(expandDebugFilePath("100%%-%p", "h", 1), "100%-1");
  // Anything else stays as written, a trailing % too.
  EXPECT_EQ(expandDebugFilePath("a%xb%", "h", 1), "a%xb%");
  EXPECT_EQ(expandDebugFilePath("plain.log", "h", 1), "plain.log");
}

}  // namespace
}  // namespace hora::log
