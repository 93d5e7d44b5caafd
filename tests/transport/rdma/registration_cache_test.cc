// RegistrationCache: one registration per memory owner and range of a
// protection domain, shared by its queue pairs, ended with its last
// holder. The backend here is a stand-in that records what it was asked.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/error.h"
#include "transport/memory_owner.h"
#include "transport/rdma/registration_cache.h"

namespace hora::transport::rdma {
namespace {

struct Backend {
  std::vector<std::pair<char*, std::size_t>> made;
  std::vector<void*> ended;
  std::uint64_t nextKey = 100;

  auto make() {
    return [this](char* start, std::size_t bytes) {
      made.emplace_back(start, bytes);
      const std::uint64_t key = nextKey++;
      return Registration{key, key + 1000, reinterpret_cast<std::uintptr_t>(start), reinterpret_cast<void*>(key)};
    };
  }
  auto end() {
    return [this](void* handle) { ended.push_back(handle); };
  }
};

TEST(RegistrationCache, AQueuePairGetsTheRangeItAskedFor) {
  Backend backend;
  RegistrationCache cache;
  char buffer[5000];
  const HeldRegion held = cache.acquire(newMemoryOwner(), buffer + 100, 1000, Access::LocalRead, backend.make(), backend.end());
  ASSERT_EQ(backend.made.size(), 1u);
  // Exactly the range: a peer's write past it must fail at the NIC, not
  // land in whatever shares its pages.
  EXPECT_EQ(backend.made[0].first, buffer + 100);
  EXPECT_EQ(backend.made[0].second, 1000u);
  EXPECT_EQ(held.region.base, buffer + 100);
  EXPECT_EQ(held.region.bytes, 1000u);
  EXPECT_EQ(held.region.localKey, 100u);
  EXPECT_EQ(held.region.remoteKey, 1100u);
  EXPECT_EQ(held.region.remoteAddress, reinterpret_cast<std::uintptr_t>(buffer + 100));
}

TEST(RegistrationCache, TheSameMemoryOfOneOwnerIsRegisteredOnceUntilTheLastHolderReleases) {
  Backend backend;
  RegistrationCache cache;
  std::vector<char> buffer(4096);
  const std::uint64_t owner = newMemoryOwner();
  // Three queue pairs of one domain: a buffer sent to three peers.
  std::vector<HeldRegion> held;
  for (int q = 0; q < 3; ++q) held.push_back(cache.acquire(owner, buffer.data(), buffer.size(), Access::LocalRead, backend.make(), backend.end()));
  EXPECT_EQ(backend.made.size(), 1u);
  EXPECT_EQ(cache.registrations(), 1u);
  EXPECT_EQ(held[2].region.localKey, held[0].region.localKey);
  cache.release(held[0], backend.end());
  cache.release(held[1], backend.end());
  EXPECT_TRUE(backend.ended.empty()) << "one holder is left";
  cache.release(held[2], backend.end());
  ASSERT_EQ(backend.ended.size(), 1u);
  EXPECT_EQ(cache.registrations(), 0u);
  // Registered anew once it has ended.
  cache.release(cache.acquire(owner, buffer.data(), buffer.size(), Access::LocalRead, backend.make(), backend.end()), backend.end());
  EXPECT_EQ(cache.registrationsMade(), 2u);
}

// The case the owner is for: a connection still holds the registration of
// a buffer the program deregistered (a failed communicator leaves the
// release to the connection), and the program frees the buffer and gets
// new memory at the same address, which it registers again. The new
// memory must get a registration of its own: the old one maps the old
// pages.
TEST(RegistrationCache, NewMemoryAtAnOldAddressIsNeverGivenTheOldRegistration) {
  Backend backend;
  RegistrationCache cache;
  std::vector<char> buffer(4096);
  const HeldRegion stale = cache.acquire(newMemoryOwner(), buffer.data(), buffer.size(), Access::LocalRead, backend.make(), backend.end());
  const HeldRegion fresh = cache.acquire(newMemoryOwner(), buffer.data(), buffer.size(), Access::LocalRead, backend.make(), backend.end());
  EXPECT_EQ(backend.made.size(), 2u);
  EXPECT_NE(fresh.region.localKey, stale.region.localKey);
  cache.release(stale, backend.end());
  cache.release(fresh, backend.end());
  EXPECT_EQ(backend.ended.size(), 2u);
}

TEST(RegistrationCache, OtherRangesOtherRightsAndOwnerlessMemoryAreNotShared) {
  Backend backend;
  RegistrationCache cache;
  std::vector<char> buffer(8192);
  const std::uint64_t owner = newMemoryOwner();
  const HeldRegion whole = cache.acquire(owner, buffer.data(), buffer.size(), Access::LocalRead, backend.make(), backend.end());
  const HeldRegion part = cache.acquire(owner, buffer.data() + 64, 128, Access::LocalRead, backend.make(), backend.end());
  const HeldRegion a = cache.acquire(0, buffer.data(), buffer.size(), Access::LocalRead, backend.make(), backend.end());
  const HeldRegion b = cache.acquire(0, buffer.data(), buffer.size(), Access::LocalRead, backend.make(), backend.end());
  // The same memory for other rights: never the registration made for reads.
  const HeldRegion written =
      cache.acquire(owner, buffer.data(), buffer.size(), Access::RemoteWrite, backend.make(), backend.end());
  EXPECT_EQ(written.region.access, Access::RemoteWrite);
  EXPECT_EQ(backend.made.size(), 5u);
  for (const HeldRegion& held : {whole, part, a, b, written}) cache.release(held, backend.end());
  EXPECT_EQ(backend.ended.size(), 5u);
  EXPECT_EQ(cache.registrations(), 0u);
}

TEST(RegistrationCache, AFailedRegistrationLeavesNothingBehind) {
  Backend backend;
  RegistrationCache cache;
  char buffer[64];
  const std::uint64_t owner = newMemoryOwner();
  EXPECT_THROW(cache.acquire(
                   owner, buffer, sizeof(buffer), Access::LocalRead,
                   [](char*, std::size_t) -> Registration { throw std::runtime_error("the device refused"); },
                   backend.end()),
               std::runtime_error);
  EXPECT_EQ(cache.registrations(), 0u);
  const HeldRegion held = cache.acquire(owner, buffer, sizeof(buffer), Access::LocalRead, backend.make(), backend.end());
  EXPECT_EQ(backend.made.size(), 1u) << "the next request registers anew";
  cache.release(held, backend.end());
  EXPECT_EQ(backend.ended.size(), 1u);
}

TEST(RegistrationCache, ReleasingWhatIsNotHeldIsRefused) {
  Backend backend;
  RegistrationCache cache;
  char buffer[64];
  HeldRegion never{{buffer, sizeof(buffer), 1, 2, 0}, newMemoryOwner()};
  EXPECT_THROW(cache.release(never, backend.end()), Error);
  const HeldRegion once = cache.acquire(newMemoryOwner(), buffer, sizeof(buffer), Access::LocalRead, backend.make(), backend.end());
  cache.release(once, backend.end());
  EXPECT_THROW(cache.release(once, backend.end()), Error) << "released twice";
}

// Ranks as threads share a port: many threads taking and giving back the
// same memory's registration make it once at a time and end every one.
TEST(RegistrationCache, ThreadsShareItSafely) {
  RegistrationCache cache;
  char buffer[256];
  const std::uint64_t owner = newMemoryOwner();
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
      for (int i = 0; i < 2000; ++i) cache.release(cache.acquire(owner, buffer, sizeof(buffer), Access::LocalRead, make, end), end);
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(made.load(), ended.load());
  EXPECT_EQ(mostLive.load(), 1) << "two registrations of one owner's memory were live at once";
  EXPECT_EQ(cache.registrations(), 0u);
}

TEST(MemoryOwner, NumbersAreNeverReused) {
  const std::uint64_t first = newMemoryOwner();
  const std::uint64_t second = newMemoryOwner();
  EXPECT_NE(first, 0u);
  EXPECT_GT(second, first);
}

}  // namespace
}  // namespace hora::transport::rdma
