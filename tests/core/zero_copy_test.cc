// Which collectives take the zero-copy path on windows, seen through the
// communicator's own count, with results checked exactly: with every rank's
// buffers in windows it is taken (all-reduce, reduce-scatter, all-gather,
// broadcast, reduce); with one rank's buffers outside windows, below
// HORA_ZERO_COPY_MIN, or with windows of plain heap memory, the ring runs
// instead, with the same results; a pre-multiplied sum takes it only where
// every rank gives the same scalar. (tests/collectives covers every type and
// reduction on windows; this file shows the path is the one intended.)
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "api/nccl_api.h"
#include "nccl.h"
#include "support/rank_threads.h"

namespace {

constexpr int kRanks = 2;

// Runs body(rank) on a thread per rank.
void onEveryRank(const std::function<void(int)>& body) {
  hora::test_support::onEachRank(kRanks, body);
}

struct Ranks {
  std::vector<ncclComm_t> comms = std::vector<ncclComm_t>(kRanks, nullptr);
  Ranks() { EXPECT_EQ(ncclCommInitAll(comms.data(), kRanks, nullptr), ncclSuccess); }
  ~Ranks() {
    for (ncclComm_t comm : comms)
      if (comm != nullptr) ncclCommDestroy(comm);
  }
  std::uint64_t zeroCopyCollectives(int rank) const {
    return comms[rank]->impl->zeroCopyCollectives();
  }
};

// One rank's buffers: from ncclMemAlloc and registered as windows, or not.
struct Buffers {
  std::int32_t* send = nullptr;
  std::int32_t* recv = nullptr;
  bool shared;
  std::vector<ncclWindow_t> windows;

  Buffers(std::size_t count, bool fromMemAlloc) : shared(fromMemAlloc) {
    const std::size_t bytes = count * sizeof(std::int32_t);
    void* s = nullptr;
    void* r = nullptr;
    if (shared) {
      EXPECT_EQ(ncclMemAlloc(&s, bytes), ncclSuccess);
      EXPECT_EQ(ncclMemAlloc(&r, bytes), ncclSuccess);
    } else {
      s = std::malloc(bytes);
      r = std::malloc(bytes);
    }
    send = static_cast<std::int32_t*>(s);
    recv = static_cast<std::int32_t*>(r);
  }
  ~Buffers() {
    if (shared) {
      ncclMemFree(send);
      ncclMemFree(recv);
    } else {
      std::free(send);
      std::free(recv);
    }
  }
  // Collective: every rank registers at once.
  void registerWindows(ncclComm_t comm, std::size_t count) {
    for (void* buffer : {static_cast<void*>(send), static_cast<void*>(recv)}) {
      ncclWindow_t window = nullptr;
      ASSERT_EQ(ncclCommWindowRegister(comm, buffer, count * sizeof(std::int32_t), &window,
                                       NCCL_WIN_COLL_SYMMETRIC),
                ncclSuccess)
          << ncclGetLastError(comm);
      windows.push_back(window);
    }
  }
  void deregisterWindows(ncclComm_t comm) {
    for (ncclWindow_t window : windows)
      EXPECT_EQ(ncclCommWindowDeregister(comm, window), ncclSuccess);
    windows.clear();
  }
};

// Every rank all-reduces count int32s (rank r holds r * 1000 + i); returns
// how many of the ranks took the zero-copy path, after checking the sums.
int zeroCopyRanks(Ranks& ranks, std::size_t count, const std::vector<bool>& fromMemAlloc,
                  bool windowsOnEveryRank) {
  std::vector<int> took(kRanks, 0);
  onEveryRank([&](int rank) {
    ncclComm_t comm = ranks.comms[rank];
    Buffers buffers(count, fromMemAlloc[rank]);
    for (std::size_t i = 0; i < count; ++i) buffers.send[i] = rank * 1000 + static_cast<int>(i);
    if (windowsOnEveryRank) buffers.registerWindows(comm, count);
    const std::uint64_t before = ranks.zeroCopyCollectives(rank);
    ASSERT_EQ(ncclAllReduce(buffers.send, buffers.recv, count, ncclInt32, ncclSum, comm, nullptr),
              ncclSuccess)
        << ncclGetLastError(comm);
    took[rank] = static_cast<int>(ranks.zeroCopyCollectives(rank) - before);
    // sum over r of (r * 1000 + i) = 1000 * (0 + 1) + 2i for two ranks
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(buffers.recv[i], 1000 + 2 * static_cast<int>(i)) << "rank " << rank << " at " << i;
    buffers.deregisterWindows(comm);
  });
  return took[0] + took[1];
}

constexpr std::size_t kLarge = 100003;  // ~400 KB: above the default minimum

TEST(ZeroCopy, TakenWhenEveryRankHasWindows) {
  Ranks ranks;
  EXPECT_EQ(zeroCopyRanks(ranks, kLarge, {true, true}, true), kRanks);
  // Again on the same communicator, with new windows.
  EXPECT_EQ(zeroCopyRanks(ranks, kLarge, {true, true}, true), kRanks);
}

TEST(ZeroCopy, NotTakenWithoutWindows) {
  Ranks ranks;
  EXPECT_EQ(zeroCopyRanks(ranks, kLarge, {true, true}, false), 0);
}

TEST(ZeroCopy, NotTakenWhenOneRanksWindowsAreHeapMemory) {
  // Heap memory cannot be mapped by another process: the window registers,
  // but every rank learns it cannot be used without copies.
  Ranks ranks;
  EXPECT_EQ(zeroCopyRanks(ranks, kLarge, {true, false}, true), 0);
}

TEST(ZeroCopy, NotTakenBelowTheMinimum) {
  Ranks ranks;
  EXPECT_EQ(zeroCopyRanks(ranks, 1000, {true, true}, true), 0);  // 4 KB < 64 KiB
}

TEST(ZeroCopy, OneRankOutsideItsWindowsFallsBackOnEveryRank) {
  Ranks ranks;
  std::vector<int> took(kRanks, 0);
  onEveryRank([&](int rank) {
    ncclComm_t comm = ranks.comms[rank];
    Buffers windowed(kLarge, true);
    windowed.registerWindows(comm, kLarge);
    // Rank 1 all-reduces from a buffer outside its windows.
    Buffers plain(kLarge, false);
    Buffers& used = rank == 1 ? plain : windowed;
    for (std::size_t i = 0; i < kLarge; ++i) used.send[i] = rank * 1000 + static_cast<int>(i);
    const std::uint64_t before = ranks.zeroCopyCollectives(rank);
    ASSERT_EQ(ncclAllReduce(used.send, used.recv, kLarge, ncclInt32, ncclSum, comm, nullptr),
              ncclSuccess);
    took[rank] = static_cast<int>(ranks.zeroCopyCollectives(rank) - before);
    for (std::size_t i = 0; i < kLarge; ++i)
      ASSERT_EQ(used.recv[i], 1000 + 2 * static_cast<int>(i)) << "rank " << rank << " at " << i;
    windowed.deregisterWindows(comm);
  });
  EXPECT_EQ(took[0], 0);
  EXPECT_EQ(took[1], 0);
}

// Each rank registers a window of its own size (NCCL's windows may differ
// by rank), and uses a buffer at its own offset in it: the zero-copy path
// reaches each peer's buffer by that peer's size, not this rank's.
TEST(ZeroCopy, WindowsOfADifferentSizeOnEachRank) {
  Ranks ranks;
  std::vector<int> took(kRanks, 0);
  onEveryRank([&](int rank) {
    ncclComm_t comm = ranks.comms[rank];
    const std::size_t windowCount = (rank + 1) * 3 * kLarge;  // rank 1's is twice rank 0's
    const std::size_t offset = rank * 4 * kLarge;             // past the end of rank 0's window
    Buffers window(windowCount, true);
    window.registerWindows(comm, windowCount);
    std::int32_t* send = window.send + offset;
    std::int32_t* recv = window.recv + offset;
    for (std::size_t i = 0; i < kLarge; ++i) send[i] = rank * 1000 + static_cast<int>(i);
    const std::uint64_t before = ranks.zeroCopyCollectives(rank);
    ASSERT_EQ(ncclAllReduce(send, recv, kLarge, ncclInt32, ncclSum, comm, nullptr), ncclSuccess)
        << ncclGetLastError(comm);
    took[rank] = static_cast<int>(ranks.zeroCopyCollectives(rank) - before);
    for (std::size_t i = 0; i < kLarge; ++i)
      ASSERT_EQ(recv[i], 1000 + 2 * static_cast<int>(i)) << "rank " << rank << " at " << i;
    window.deregisterWindows(comm);
  });
  EXPECT_EQ(took[0] + took[1], kRanks);
}

// Deregistering is local, as in NCCL: a rank that let go of its windows
// before its peer did still runs the next collectives with it (on plain
// buffers, through the FIFOs), rather than failing them as a mismatch.
TEST(ZeroCopy, ARankThatDeregisteredItsWindowsFirstStillMeetsItsPeers) {
  Ranks ranks;
  EXPECT_EQ(zeroCopyRanks(ranks, kLarge, {true, true}, true), kRanks);
  std::vector<int> took(kRanks, 0);
  onEveryRank([&](int rank) {
    ncclComm_t comm = ranks.comms[rank];
    Buffers windowed(kLarge, true);
    windowed.registerWindows(comm, kLarge);
    if (rank == 0) windowed.deregisterWindows(comm);
    Buffers plain(kLarge, false);
    for (std::size_t i = 0; i < kLarge; ++i) plain.send[i] = rank * 1000 + static_cast<int>(i);
    const std::uint64_t before = ranks.zeroCopyCollectives(rank);
    for (int call = 0; call < 2; ++call) {
      ASSERT_EQ(ncclAllReduce(plain.send, plain.recv, kLarge, ncclInt32, ncclSum, comm, nullptr), ncclSuccess)
          << "rank " << rank << ": " << ncclGetLastError(comm);
      for (std::size_t i = 0; i < kLarge; ++i)
        ASSERT_EQ(plain.recv[i], 1000 + 2 * static_cast<int>(i)) << "rank " << rank << " at " << i;
    }
    took[rank] = static_cast<int>(ranks.zeroCopyCollectives(rank) - before);
    windowed.deregisterWindows(comm);
  });
  EXPECT_EQ(took[0] + took[1], 0);
}

// On a communicator that failed (here: ranks that disagreed on a count),
// deregistering a window still succeeds, as in NCCL, and only once.
TEST(ZeroCopy, AWindowIsDeregisteredFromACommunicatorThatFailed) {
  Ranks ranks;
  onEveryRank([&](int rank) {
    ncclComm_t comm = ranks.comms[rank];
    Buffers windowed(kLarge, true);
    windowed.registerWindows(comm, kLarge);
    EXPECT_EQ(ncclAllReduce(windowed.send, windowed.recv, kLarge - rank, ncclInt32, ncclSum, comm, nullptr),
              ncclInvalidUsage);
    for (ncclWindow_t window : windowed.windows) {
      EXPECT_EQ(ncclCommWindowDeregister(comm, window), ncclSuccess) << "rank " << rank << ": "
                                                                     << ncclGetLastError(comm);
      EXPECT_EQ(ncclCommWindowDeregister(comm, window), ncclInvalidUsage);
    }
    windowed.windows.clear();
  });
}

// An all-reduce on windows with a pre-multiplied sum whose scalar is
// scalars[r] on rank r: each rank's input is scaled by its own scalar (as
// NCCL defines it), so the zero-copy path, which reduces every rank's input
// with the scalar of the rank doing the work, is taken only where the
// scalars are equal on every rank (ncclAvg). Returns how many ranks took
// it, after checking every element exactly.
int zeroCopyRanksWithScalars(Ranks& ranks, const std::vector<std::int32_t>& scalars,
                             std::size_t count = kLarge) {
  std::vector<int> took(kRanks, 0);
  onEveryRank([&](int rank) {
    ncclComm_t comm = ranks.comms[rank];
    Buffers buffers(count, true);
    for (std::size_t i = 0; i < count; ++i) buffers.send[i] = rank * 1000 + static_cast<int>(i % 1000);
    buffers.registerWindows(comm, count);
    ncclRedOp_t op;
    std::int32_t scalar = scalars[rank];
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclInt32, ncclScalarHostImmediate, comm), ncclSuccess);
    const std::uint64_t before = ranks.zeroCopyCollectives(rank);
    ASSERT_EQ(ncclAllReduce(buffers.send, buffers.recv, count, ncclInt32, op, comm, nullptr), ncclSuccess)
        << ncclGetLastError(comm);
    took[rank] = static_cast<int>(ranks.zeroCopyCollectives(rank) - before);
    for (std::size_t i = 0; i < count; ++i) {
      const std::int32_t x = static_cast<int>(i % 1000);
      ASSERT_EQ(buffers.recv[i], scalars[0] * x + scalars[1] * (1000 + x)) << "rank " << rank << " at " << i;
    }
    EXPECT_EQ(ncclRedOpDestroy(op, comm), ncclSuccess);
    buffers.deregisterWindows(comm);
  });
  return took[0] + took[1];
}

TEST(ZeroCopy, PreMulSumWithEqualScalarsIsTaken) {
  Ranks ranks;
  EXPECT_EQ(zeroCopyRanksWithScalars(ranks, {3, 3}), kRanks);
}

TEST(ZeroCopy, PreMulSumWithScalarsThatDifferTakesTheRingOnEveryRank) {
  Ranks ranks;
  EXPECT_EQ(zeroCopyRanksWithScalars(ranks, {2, 3}), 0);
  // Below the minimum the direct all-reduce runs: each rank scales its own
  // input there too.
  EXPECT_EQ(zeroCopyRanksWithScalars(ranks, {2, 3}, 1000), 0);
}

// Each collective on windows of kRanks * kLarge int32s per buffer; rank r's
// input element i is r * 1000 + i.
TEST(ZeroCopy, TakenByEveryCollective) {
  Ranks ranks;
  const std::size_t n = kLarge;
  struct Check {
    const char* name;
    std::function<ncclResult_t(Buffers&, ncclComm_t)> call;
    std::function<std::int32_t(int rank, std::size_t i)> expected;
    std::size_t outputs;
  };
  const int root = 1;
  const std::vector<Check> checks = {
      {"reduce_scatter",
       [&](Buffers& b, ncclComm_t c) {
         return ncclReduceScatter(b.send, b.recv, n, ncclInt32, ncclSum, c, nullptr);
       },
       [&](int rank, std::size_t i) { return 1000 + 2 * static_cast<int>(rank * n + i); }, n},
      {"all_gather",
       [&](Buffers& b, ncclComm_t c) {
         return ncclAllGather(b.send, b.recv, n, ncclInt32, c, nullptr);
       },
       [&](int, std::size_t i) { return static_cast<int>(i / n) * 1000 + static_cast<int>(i % n); },
       kRanks * n},
      {"broadcast",
       [&](Buffers& b, ncclComm_t c) {
         return ncclBroadcast(b.send, b.recv, n, ncclInt32, root, c, nullptr);
       },
       [&](int, std::size_t i) { return root * 1000 + static_cast<int>(i); }, n},
      {"reduce",
       [&](Buffers& b, ncclComm_t c) {
         return ncclReduce(b.send, b.recv, n, ncclInt32, ncclSum, root, c, nullptr);
       },
       [&](int, std::size_t i) { return 1000 + 2 * static_cast<int>(i); }, n},
  };
  for (const Check& check : checks) {
    SCOPED_TRACE(check.name);
    std::vector<int> took(kRanks, 0);
    onEveryRank([&](int rank) {
      ncclComm_t comm = ranks.comms[rank];
      Buffers buffers(kRanks * n, true);
      for (std::size_t i = 0; i < kRanks * n; ++i)
        buffers.send[i] = rank * 1000 + static_cast<int>(i);
      buffers.registerWindows(comm, kRanks * n);
      const std::uint64_t before = ranks.zeroCopyCollectives(rank);
      ASSERT_EQ(check.call(buffers, comm), ncclSuccess) << ncclGetLastError(comm);
      took[rank] = static_cast<int>(ranks.zeroCopyCollectives(rank) - before);
      const bool hasOutput = std::string(check.name) != "reduce" || rank == root;
      for (std::size_t i = 0; hasOutput && i < check.outputs; ++i)
        ASSERT_EQ(buffers.recv[i], check.expected(rank, i)) << "rank " << rank << " at " << i;
      buffers.deregisterWindows(comm);
    });
    EXPECT_EQ(took[0] + took[1], kRanks);
  }
}

}  // namespace
