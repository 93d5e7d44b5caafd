// RegistrationCache: one registration per page range of a protection
// domain, shared by its queue pairs, ended with its last holder. The
// backend here is a stand-in that records what it was asked to register.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/error.h"
#include "transport/rdma/registration_cache.h"

namespace hora::transport::rdma {
namespace {

constexpr std::size_t kPage = 4096;

struct Backend {
  struct Made {
    std::uintptr_t start;
    std::size_t bytes;
  };
  std::vector<Made> made;
  std::vector<void*> ended;
  std::uint64_t nextKey = 100;

  auto make() {
    return [this](char* start, std::size_t bytes) {
      made.push_back({reinterpret_cast<std::uintptr_t>(start), bytes});
      const std::uint64_t key = nextKey++;
      // Named by offset from its start (as libfabric without FI_MR_VIRT_ADDR).
      return Registration{key, key + 1000, 0, reinterpret_cast<void*>(key)};
    };
  }
  auto end() {
    return [this](void* handle) { ended.push_back(handle); };
  }
};

// A page-aligned arena to carve test buffers from.
struct Arena {
  alignas(kPage) char bytes[8 * kPage];
  char* at(std::size_t offset) { return bytes + offset; }
};

TEST(RegistrationCache, ARequestIsRegisteredAsTheWholePagesItTouches) {
  Backend backend;
  RegistrationCache cache(kPage);
  Arena arena;
  const Region region = cache.acquire(arena.at(100), 5000, backend.make());
  ASSERT_EQ(backend.made.size(), 1u);
  EXPECT_EQ(backend.made[0].start, reinterpret_cast<std::uintptr_t>(arena.at(0)));
  EXPECT_EQ(backend.made[0].bytes, 2 * kPage) << "bytes 100 to 5100 touch two pages";
  // The region is the request itself, named by its offset into the registration.
  EXPECT_EQ(region.base, arena.at(100));
  EXPECT_EQ(region.bytes, 5000u);
  EXPECT_EQ(region.remoteAddress, 100u);
  EXPECT_EQ(region.remoteAt(7), 107u);
  EXPECT_EQ(region.localKey, 100u);
  EXPECT_EQ(region.remoteKey, 1100u);
}

TEST(RegistrationCache, TheSamePagesShareOneRegistrationUntilTheLastHolderReleases) {
  Backend backend;
  RegistrationCache cache(kPage);
  Arena arena;
  // Three holders of pages 1-2: the same buffer for two queue pairs, and
  // another request whose page range is the same.
  const Region a = cache.acquire(arena.at(kPage), 2 * kPage, backend.make());
  const Region b = cache.acquire(arena.at(kPage), 2 * kPage, backend.make());
  const Region c = cache.acquire(arena.at(kPage + 64), 2 * kPage - 128, backend.make());
  EXPECT_EQ(backend.made.size(), 1u);
  EXPECT_EQ(cache.registrations(), 1u);
  EXPECT_EQ(a.localKey, b.localKey);
  EXPECT_EQ(c.localKey, a.localKey);
  EXPECT_EQ(c.remoteAddress, 64u);
  cache.release(a, backend.end());
  cache.release(c, backend.end());
  EXPECT_TRUE(backend.ended.empty()) << "one holder is left";
  EXPECT_EQ(cache.handleOf(b), reinterpret_cast<void*>(a.localKey));
  cache.release(b, backend.end());
  ASSERT_EQ(backend.ended.size(), 1u);
  EXPECT_EQ(backend.ended[0], reinterpret_cast<void*>(a.localKey));
  EXPECT_EQ(cache.registrations(), 0u);
  EXPECT_EQ(cache.handleOf(b), nullptr);
  // Registered again from scratch once it has ended.
  cache.release(cache.acquire(arena.at(kPage), 2 * kPage, backend.make()), backend.end());
  EXPECT_EQ(backend.made.size(), 2u);
  EXPECT_EQ(cache.registrationsMade(), 2u);
}

// A registration is shared only by requests of the same pages, never by
// one that lies inside it: that one's memory may outlive the pages around
// it, which could be unmapped and mapped again to other memory the
// registration does not see.
TEST(RegistrationCache, ARequestInsideAnotherRegistrationGetsItsOwn) {
  Backend backend;
  RegistrationCache cache(kPage);
  Arena arena;
  const Region whole = cache.acquire(arena.at(0), 4 * kPage, backend.make());
  const Region inside = cache.acquire(arena.at(kPage), kPage, backend.make());
  const Region overlapping = cache.acquire(arena.at(3 * kPage), 2 * kPage, backend.make());
  EXPECT_EQ(backend.made.size(), 3u);
  EXPECT_NE(inside.localKey, whole.localKey);
  EXPECT_NE(overlapping.localKey, whole.localKey);
  for (const Region& region : {whole, inside, overlapping}) cache.release(region, backend.end());
  EXPECT_EQ(backend.ended.size(), 3u);
}

TEST(RegistrationCache, AFailedRegistrationLeavesNothingBehind) {
  Backend backend;
  RegistrationCache cache(kPage);
  Arena arena;
  EXPECT_THROW(cache.acquire(arena.at(0), 10, [](char*, std::size_t) -> Registration {
    throw std::runtime_error("the device refused");
  }),
               std::runtime_error);
  EXPECT_EQ(cache.registrations(), 0u);
  const Region region = cache.acquire(arena.at(0), 10, backend.make());
  EXPECT_EQ(backend.made.size(), 1u) << "the next request registers anew";
  cache.release(region, backend.end());
  EXPECT_EQ(backend.ended.size(), 1u);
}

TEST(RegistrationCache, BadRequestsAreRefused) {
  Backend backend;
  RegistrationCache cache(kPage);
  Arena arena;
  EXPECT_THROW(cache.acquire(arena.at(0), 0, backend.make()), Error);
  Region never{arena.at(0), 10, 1, 2, 0};
  EXPECT_THROW(cache.release(never, backend.end()), Error);
  const Region once = cache.acquire(arena.at(0), 10, backend.make());
  cache.release(once, backend.end());
  EXPECT_THROW(cache.release(once, backend.end()), Error) << "released twice";
  EXPECT_THROW(RegistrationCache(3000), Error) << "a page size that is not a power of two";
}

// Ranks as threads share a port: many threads taking and giving back the
// same buffer's registration make it once at a time and end every one.
TEST(RegistrationCache, ThreadsShareItSafely) {
  RegistrationCache cache(kPage);
  Arena arena;
  std::atomic<int> made{0}, ended{0}, live{0}, mostLive{0};
  auto make = [&](char*, std::size_t) {
    const int now = ++live;
    for (int seen = mostLive.load(); now > seen && !mostLive.compare_exchange_weak(seen, now);) {
    }
    ++made;
    return Registration{1, 2, 0, nullptr};
  };
  auto end = [&](void*) {
    --live;
    ++ended;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) cache.release(cache.acquire(arena.at(8), 100, make), end);
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(made.load(), ended.load());
  EXPECT_EQ(mostLive.load(), 1) << "two registrations of one page range were live at once";
  EXPECT_EQ(cache.registrations(), 0u);
}

}  // namespace
}  // namespace hora::transport::rdma
