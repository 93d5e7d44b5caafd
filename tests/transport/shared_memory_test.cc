// Shareable allocations (what ncclMemAlloc returns) and peers' mappings of
// them: a range is found in the allocation that holds it and nowhere else;
// a mapping of it, here by this process itself and by a forked child, sees
// and makes the same writes; a mapping of the wrong file is refused.
#include "transport/shm/shared_memory.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "hora/communicator.h"

namespace hora::transport::testing {
namespace {

TEST(SharedMemory, FindsTheAllocationHoldingARange) {
  char* data = static_cast<char*>(allocateShared(10000));
  auto whole = findShared(data, 10000);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->pid, ::getpid());
  EXPECT_EQ(whole->fileOffset, 0u);
  auto inside = findShared(data + 4097, 100);
  ASSERT_TRUE(inside.has_value());
  EXPECT_EQ(inside->fileOffset, 4097u);
  EXPECT_EQ(inside->bytes, 100u);
  // The allocation is rounded up to pages; beyond that nothing is found.
  const std::size_t mapped = (10000 + ::getpagesize() - 1) / ::getpagesize() * ::getpagesize();
  EXPECT_TRUE(findShared(data + mapped - 1, 1).has_value());
  EXPECT_FALSE(findShared(data + mapped - 1, 2).has_value());
  EXPECT_FALSE(findShared(data - 1, 1).has_value());
  int onStack = 0;
  EXPECT_FALSE(findShared(&onStack, sizeof(onStack)).has_value());
  freeShared(data);
  EXPECT_FALSE(findShared(data, 1).has_value());
}

TEST(SharedMemory, FreeingAnythingElseIsRefused) {
  int onStack = 0;
  EXPECT_THROW(freeShared(&onStack), Error);
  char* data = static_cast<char*>(allocateShared(64));
  EXPECT_THROW(freeShared(data + 1), Error);
  freeShared(data);
  EXPECT_THROW(freeShared(data), Error);
  EXPECT_THROW(allocateShared(0), Error);
}

TEST(SharedMemory, AMappingSeesAndMakesTheSameWrites) {
  char* data = static_cast<char*>(allocateShared(3 * 4096));
  // A range that starts inside a page: the mapping's pointer must land on it.
  auto range = findShared(data + 5000, 6000);
  ASSERT_TRUE(range.has_value());
  PeerMapping mapping = PeerMapping::open(*range);
  char* view = static_cast<char*>(mapping.data());
  ASSERT_NE(view, data + 5000);  // a second mapping, not the same address
  data[5000] = 'a';
  data[10999] = 'b';
  EXPECT_EQ(view[0], 'a');
  EXPECT_EQ(view[5999], 'b');
  view[1] = 'c';
  EXPECT_EQ(data[5001], 'c');
  freeShared(data);
  // The mapping keeps the memory after the owner freed it.
  view[2] = 'd';
  EXPECT_EQ(view[2], 'd');
}

TEST(SharedMemory, AnotherProcessMapsAndWrites) {
  char* data = static_cast<char*>(allocateShared(1 << 20));
  std::memset(data, 1, 1 << 20);
  auto range = findShared(data, 1 << 20);
  ASSERT_TRUE(range.has_value());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Maps the parent's allocation through /proc/<parent>/fd/<fd>, checks a
    // byte, and writes the last one.
    try {
      PeerMapping mapping = PeerMapping::open(*range);
      char* view = static_cast<char*>(mapping.data());
      if (view[12345] != 1) ::_exit(2);
      view[(1 << 20) - 1] = 7;
      ::_exit(0);
    } catch (...) {
      ::_exit(3);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(data[(1 << 20) - 1], 7);
  freeShared(data);
}

TEST(SharedMemory, AMappingOfTheWrongFileIsRefused) {
  char* data = static_cast<char*>(allocateShared(4096));
  auto range = findShared(data, 4096);
  ASSERT_TRUE(range.has_value());
  SharedRange wrong = *range;
  wrong.inode += 1;  // as if the pid named another process's descriptor
  try {
    PeerMapping::open(wrong);
    ADD_FAILURE() << "mapped a file that is not the one named";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("not the peer's memory"), std::string::npos)
        << error.what();
  }
  SharedRange closed = *range;
  closed.fd = 1 << 20;  // no such descriptor
  EXPECT_THROW(PeerMapping::open(closed), Error);
  freeShared(data);
}

}  // namespace
}  // namespace hora::transport::testing
