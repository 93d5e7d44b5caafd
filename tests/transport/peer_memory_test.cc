// The peer-memory interface over host shared memory: what ncclMemAlloc and
// windows use, whatever memory implements it.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "hora/error.h"
#include "transport/peer_memory.h"

namespace hora::transport {
namespace {

TEST(HostPeerMemory, AnExportedRangeMapsTheSameBytes) {
  PeerMemory& memory = hostPeerMemory();
  auto* buffer = static_cast<char*>(memory.allocate(3 * 4096));
  std::memset(buffer, 0, 3 * 4096);
  const auto handle = memory.exportRange(buffer + 4096 + 10, 100);
  ASSERT_TRUE(handle.has_value());
  {
    const auto mapping = memory.import(*handle);
    auto* peer = static_cast<char*>(mapping->data());
    EXPECT_NE(peer, buffer + 4096 + 10);  // a second mapping of the same pages
    std::memcpy(peer, "written through the peer's mapping", 35);
    EXPECT_STREQ(buffer + 4096 + 10, "written through the peer's mapping");
  }
  memory.free(buffer);
}

TEST(HostPeerMemory, MemoryNotAllocatedByItIsNotExportedNorFreed) {
  PeerMemory& memory = hostPeerMemory();
  std::vector<char> heap(4096);
  EXPECT_FALSE(memory.exportRange(heap.data(), heap.size()).has_value());
  EXPECT_THROW(memory.free(heap.data()), Error);
  void* buffer = memory.allocate(4096);
  EXPECT_FALSE(memory.exportRange(buffer, 2 * 4096).has_value());  // runs past the allocation
  memory.free(buffer);
}

TEST(HostPeerMemory, AHandleOfNothingDoesNotMap) {
  PeerMemoryHandle garbage{};
  EXPECT_THROW(hostPeerMemory().import(garbage), Error);
}

}  // namespace
}  // namespace hora::transport
