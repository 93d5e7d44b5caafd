// ShmFifo over a double-mapped segment, set up the way connectShmSender
// sets it up. The counters only ever grow and the ring is addressed modulo
// its capacity, so the bugs to catch are at the wrap point: every test runs
// the stream across the ring's end many times and checks each byte's value
// and position (byte_pattern.h), the free/available bookkeeping after every
// step, and that writeRegion/readRegion hand out one contiguous range where
// the run wraps. The last tests stream 64 MiB between two threads through a
// 64 KiB ring, copying and in place, under a deadline so that a lost update
// fails instead of hanging.
#include "transport/shm/shm_fifo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "byte_pattern.h"
#include "transport/shm/shm_segment.h"

namespace hora::transport::testing {
namespace {

const std::size_t kPage = ShmSegment::pageBytes();

// A FIFO of `capacity` bytes (whole pages) with its header in the first
// page, as connectShmSender lays it out.
struct FifoInSegment {
  explicit FifoInSegment(std::size_t capacity)
      : segment(ShmSegment::create(kPage + capacity, kPage)), fifo(initHeader(segment, capacity)) {}

  static void* initHeader(ShmSegment& segment, std::size_t capacity) {
    auto* header = new (segment.data()) ShmFifoHeader();
    header->magic = ShmFifoHeader::kMagic;
    header->capacity = capacity;
    header->dataOffset = kPage;
    return segment.data();
  }
  char* ring() const { return static_cast<char*>(segment.data()) + kPage; }

  ShmSegment segment;
  ShmFifo fifo;
};

void expectCounts(const ShmFifo& fifo, std::uint64_t available) {
  EXPECT_EQ(fifo.availableBytes(), available);
  EXPECT_EQ(fifo.freeBytes(), fifo.capacity() - available);
}

TEST(ShmFifoTest, EmptyFifoHasNothingToPop) {
  FifoInSegment f(2 * kPage);
  EXPECT_EQ(f.fifo.capacity(), 2 * kPage);
  expectCounts(f.fifo, 0);
  char out[16];
  EXPECT_EQ(f.fifo.pop(out, sizeof(out)), 0u);
  std::size_t ready = 99;
  f.fifo.readRegion(&ready);
  EXPECT_EQ(ready, 0u);
  std::size_t room = 0;
  EXPECT_EQ(f.fifo.writeRegion(&room, f.fifo.capacity()), f.ring());
  EXPECT_EQ(room, 2 * kPage);
}

// The producer reloads the consumer's counter only when the room it last
// saw is less than it wants: a small write then costs no transfer of that
// line. The room it reports may be understated, but never below what it
// wants while that much is free.
TEST(ShmFifoTest, ProducerReloadsTheReadCounterOnlyWhenItWantsMore) {
  FifoInSegment f(kPage);
  const std::size_t capacity = f.fifo.capacity();
  std::vector<char> data = patternBytes(100, 0);
  std::vector<char> out(100);
  ASSERT_EQ(f.fifo.push(data.data(), 100), 100u);
  ASSERT_EQ(f.fifo.pop(out.data(), 100), 100u);  // all free again
  std::size_t room = 0;
  f.fifo.writeRegion(&room, 1);
  EXPECT_EQ(room, capacity - 100) << "a small want reuses the room seen before";
  f.fifo.writeRegion(&room, capacity);
  EXPECT_EQ(room, capacity) << "a larger want loads the counter again";
  // A producer that wants a full ring of an empty FIFO gets all of it.
  EXPECT_EQ(f.fifo.push(patternBytes(capacity, 1).data(), capacity), capacity);
}

TEST(ShmFifoTest, PushTakesOnlyWhatFits) {
  FifoInSegment f(kPage);
  const std::size_t capacity = f.fifo.capacity();
  std::vector<char> data = patternBytes(capacity + 100, 0);

  EXPECT_EQ(f.fifo.push(data.data(), 10), 10u);
  expectCounts(f.fifo, 10);
  EXPECT_EQ(f.fifo.push(data.data() + 10, capacity), capacity - 10);
  expectCounts(f.fifo, capacity);
  EXPECT_EQ(f.fifo.push(data.data() + capacity, 100), 0u) << "a full FIFO takes nothing";
  expectCounts(f.fifo, capacity);

  std::vector<char> out(capacity + 100, 0);
  EXPECT_EQ(f.fifo.pop(out.data(), out.size()), capacity);
  EXPECT_EQ(patternMismatches(out.data(), capacity, 0), 0u);
  expectCounts(f.fifo, 0);
  EXPECT_EQ(f.fifo.pop(out.data(), out.size()), 0u) << "an empty FIFO gives nothing";
}

TEST(ShmFifoTest, PopGivesOnlyWhatIsThere) {
  FifoInSegment f(kPage);
  std::vector<char> data = patternBytes(300, 0);
  ASSERT_EQ(f.fifo.push(data.data(), 300), 300u);
  std::vector<char> out(1000, 0);
  EXPECT_EQ(f.fifo.pop(out.data(), 120), 120u);
  expectCounts(f.fifo, 180);
  EXPECT_EQ(f.fifo.pop(out.data() + 120, 1000), 180u);
  EXPECT_EQ(patternMismatches(out.data(), 300, 0), 0u);
  EXPECT_EQ(out[300], 0) << "pop wrote past what it reported";
  expectCounts(f.fifo, 0);
}

// Random pushes and pops against a model that only counts positions: the
// FIFO must hold exactly the stream bytes [popped, pushed).
TEST(ShmFifoTest, RandomPushesAndPopsKeepOrderAcrossWraps) {
  FifoInSegment f(2 * kPage);
  const std::size_t capacity = f.fifo.capacity();
  SizeSequence sizes(20240611);
  std::vector<char> in(capacity), out(capacity);
  std::uint64_t pushed = 0, popped = 0;
  for (int step = 0; step < 20000; ++step) {
    const std::size_t wantIn = sizes.next(0, capacity * 3 / 4);
    fillPattern(in.data(), wantIn, pushed);
    const std::size_t free = f.fifo.freeBytes();
    const std::size_t took = f.fifo.push(in.data(), wantIn);
    ASSERT_EQ(took, std::min(wantIn, free)) << "step " << step;
    pushed += took;
    ASSERT_EQ(f.fifo.availableBytes(), pushed - popped) << "step " << step;
    ASSERT_EQ(f.fifo.freeBytes(), capacity - (pushed - popped)) << "step " << step;

    const std::size_t wantOut = sizes.next(0, capacity * 3 / 4);
    const std::size_t available = f.fifo.availableBytes();
    const std::size_t gave = f.fifo.pop(out.data(), wantOut);
    ASSERT_EQ(gave, std::min(wantOut, available)) << "step " << step;
    std::size_t firstBad = 0;
    ASSERT_EQ(patternMismatches(out.data(), gave, popped, 0, &firstBad), 0u)
        << "step " << step << ": stream byte " << popped + firstBad << " is wrong";
    popped += gave;
    ASSERT_EQ(f.fifo.availableBytes(), pushed - popped) << "step " << step;
  }
  EXPECT_GT(pushed / capacity, 100u) << "the stream should have wrapped around many times";
}

// Moves both counters to `position` (mod capacity) through an empty FIFO.
void advanceTo(ShmFifo& fifo, std::size_t position) {
  std::vector<char> scratch(position);
  ASSERT_EQ(fifo.push(scratch.data(), position), position);
  ASSERT_EQ(fifo.pop(scratch.data(), position), position);
}

TEST(ShmFifoTest, WriteRegionIsContiguousAcrossTheRingsEnd) {
  FifoInSegment f(kPage);
  const std::size_t capacity = f.fifo.capacity();
  advanceTo(f.fifo, capacity - 100);

  std::size_t room = 0;
  char* region = f.fifo.writeRegion(&room, f.fifo.capacity());
  EXPECT_EQ(room, capacity) << "an empty FIFO offers all of its ring";
  EXPECT_EQ(region, f.ring() + capacity - 100);
  // 300 bytes from 100 before the ring's end: the last 200 land in the
  // ring's second mapping, that is at the ring's start.
  fillPattern(region, 300, 0);
  f.fifo.commitWrite(300);
  expectCounts(f.fifo, 300);
  EXPECT_EQ(patternMismatches(f.ring(), 200, 100), 0u)
      << "the wrapped part is not at the ring's start";

  std::size_t ready = 0;
  const char* readable = f.fifo.readRegion(&ready);
  EXPECT_EQ(ready, 300u);
  EXPECT_EQ(readable, region);
  EXPECT_EQ(patternMismatches(readable, 300, 0), 0u);

  std::vector<char> out(300);
  EXPECT_EQ(f.fifo.pop(out.data(), 300), 300u);
  EXPECT_EQ(patternMismatches(out.data(), 300, 0), 0u);
  expectCounts(f.fifo, 0);
}

TEST(ShmFifoTest, ReadRegionIsContiguousAcrossTheRingsEnd) {
  FifoInSegment f(2 * kPage);
  const std::size_t capacity = f.fifo.capacity();
  advanceTo(f.fifo, capacity - 1);
  std::vector<char> data = patternBytes(capacity, 0, 7);
  ASSERT_EQ(f.fifo.push(data.data(), capacity), capacity);

  std::size_t ready = 0;
  const char* region = f.fifo.readRegion(&ready);
  ASSERT_EQ(ready, capacity);
  EXPECT_EQ(region, f.ring() + capacity - 1);
  EXPECT_EQ(patternMismatches(region, capacity, 0, 7), 0u);

  // Releasing part of it frees exactly that much room, at the right place.
  f.fifo.commitRead(1000);
  expectCounts(f.fifo, capacity - 1000);
  std::size_t room = 0;
  char* writable = f.fifo.writeRegion(&room, f.fifo.capacity());
  EXPECT_EQ(room, 1000u);
  EXPECT_EQ(writable, f.ring() + capacity - 1) << "writing goes on where the stream ends";
  region = f.fifo.readRegion(&ready);
  EXPECT_EQ(ready, capacity - 1000);
  EXPECT_EQ(region, f.ring() + 999) << "reading goes on after the released bytes";
  EXPECT_EQ(patternMismatches(region, ready, 1000, 7), 0u);
}

// A writer that fills its region only partly publishes only what it commits.
TEST(ShmFifoTest, CommitPublishesOnlyTheCommittedBytes) {
  FifoInSegment f(kPage);
  std::size_t room = 0;
  char* region = f.fifo.writeRegion(&room, f.fifo.capacity());
  fillPattern(region, 64, 0);
  f.fifo.commitWrite(40);
  expectCounts(f.fifo, 40);
  std::size_t ready = 0;
  f.fifo.readRegion(&ready);
  EXPECT_EQ(ready, 40u);
  region = f.fifo.writeRegion(&room, f.fifo.capacity());
  EXPECT_EQ(room, kPage - 40);
  EXPECT_EQ(region, f.ring() + 40);
}

// ------------------------------------------------------------- two threads

enum class Mode { Copy, InPlace, Mixed };

struct StreamResult {
  std::uint64_t received = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t firstBad = 0;
  bool timedOut = false;
};

// Streams `total` pattern bytes from a producer thread to a consumer thread
// in chunks of random size. Both spin (yielding) while the ring is full or
// empty, and both give up at the deadline.
StreamResult streamThroughFifo(std::size_t capacity, std::uint64_t total, Mode mode) {
  FifoInSegment f(capacity);
  ShmFifo& fifo = f.fifo;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::atomic<bool> stop{false};
  auto pastDeadline = [&] {
    if (stop.load(std::memory_order_relaxed)) return true;
    if (std::chrono::steady_clock::now() < deadline) return false;
    stop = true;
    return true;
  };

  std::thread producer([&] {
    SizeSequence sizes(1);
    std::vector<char> chunk(capacity);
    std::uint64_t sent = 0;
    for (int step = 0; sent < total; ++step) {
      const std::size_t want = std::min<std::uint64_t>(sizes.next(1, capacity), total - sent);
      const bool inPlace = mode == Mode::InPlace || (mode == Mode::Mixed && step % 2 == 1);
      std::size_t moved;
      if (inPlace) {
        std::size_t room;
        char* region = fifo.writeRegion(&room, fifo.capacity());
        moved = std::min(want, room);
        fillPattern(region, moved, sent);
        if (moved > 0) fifo.commitWrite(moved);
      } else {
        fillPattern(chunk.data(), want, sent);
        moved = fifo.push(chunk.data(), want);
      }
      sent += moved;
      if (moved == 0) {
        if (pastDeadline()) return;
        std::this_thread::yield();
      }
    }
  });

  StreamResult result;
  SizeSequence sizes(2);
  std::vector<char> chunk(capacity);
  for (int step = 0; result.received < total; ++step) {
    const std::size_t want = sizes.next(1, capacity);
    const bool inPlace = mode == Mode::InPlace || (mode == Mode::Mixed && step % 3 == 0);
    const char* data;
    std::size_t got;
    if (inPlace) {
      data = fifo.readRegion(&got);
      got = std::min(got, want);
    } else {
      got = fifo.pop(chunk.data(), want);
      data = chunk.data();
    }
    std::size_t firstBad = 0;
    const std::size_t bad = patternMismatches(data, got, result.received, 0, &firstBad);
    if (bad > 0 && result.mismatches == 0) result.firstBad = result.received + firstBad;
    result.mismatches += bad;
    if (inPlace && got > 0) fifo.commitRead(got);
    result.received += got;
    if (got == 0) {
      if (pastDeadline()) {
        result.timedOut = true;
        break;
      }
      std::this_thread::yield();
    }
  }
  stop = true;
  producer.join();
  return result;
}

void expectStreamIntact(Mode mode) {
  constexpr std::uint64_t kTotal = 64ull << 20;
  StreamResult result = streamThroughFifo(64 << 10, kTotal, mode);
  EXPECT_FALSE(result.timedOut) << "the stream stalled after " << result.received << " bytes";
  EXPECT_EQ(result.received, kTotal);
  EXPECT_EQ(result.mismatches, 0u) << "first wrong byte at stream position " << result.firstBad;
}

TEST(ShmFifoThreadsTest, StreamsByCopy) { expectStreamIntact(Mode::Copy); }
TEST(ShmFifoThreadsTest, StreamsInPlace) { expectStreamIntact(Mode::InPlace); }
TEST(ShmFifoThreadsTest, StreamsMixingCopyAndInPlace) { expectStreamIntact(Mode::Mixed); }

}  // namespace
}  // namespace hora::transport::testing
