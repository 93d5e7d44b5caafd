// hora's C++ API (include/hora/communicator.h) with ranks as threads:
// init methods, asynchronous collectives and their Work, ordering, blocking
// forms, barrier, abort, and the errors of bad arguments and init strings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <thread>

#include "cpp_world.h"

namespace hora_api_test {
namespace {

using hora::DataType;
using hora::ErrorKind;
using hora::RedOp;
using ::testing::Each;
using ::testing::HasSubstr;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kFinish = seconds(15);

// Runs `call`, expecting a hora::Error of `kind` whose text has every word.
template <typename Call>
void expectError(Call&& call, ErrorKind kind, const std::vector<std::string>& words) {
  try {
    call();
    ADD_FAILURE() << "no error thrown";
  } catch (const hora::Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    for (const auto& word : words) EXPECT_THAT(error.what(), HasSubstr(word));
  }
}

void expectErrorIn(std::exception_ptr error, ErrorKind kind, const std::vector<std::string>& words) {
  ASSERT_TRUE(error) << "the operation succeeded";
  expectError([&] { std::rethrow_exception(error); }, kind, words);
}

TEST(CppApi, TcpInitMethodMakesAWorldOfThreads) {
  World world = makeWorld(freeTcpInitMethod(), 3);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(world[rank]->rank(), rank);
    EXPECT_EQ(world[rank]->size(), 3);
  }
  std::vector<std::vector<double>> data(3);
  onEachRank(3, [&](int rank) {
    data[rank] = {double(rank), 1.0};
    world[rank]->allReduce(data[rank].data(), data[rank].data(), 2, DataType::Float64, RedOp::Sum);
  });
  for (const auto& values : data) EXPECT_EQ(values, (std::vector<double>{3.0, 3.0}));
}

TEST(CppApi, FileInitMethodMakesAWorldOfThreads) {
  auto path = std::filesystem::path(::testing::TempDir()) /
              ("hora-api-rendezvous-" + std::to_string(getpid()));
  std::filesystem::remove(path);
  World world = makeWorld("file://" + path.string(), 2);
  std::vector<std::vector<int>> data = {{7, 8, 9}, {0, 0, 0}};
  onEachRank(2, [&](int rank) {
    world[rank]->broadcast(data[rank].data(), data[rank].data(), 3, DataType::Int32, 0);
  });
  EXPECT_EQ(data[1], (std::vector<int>{7, 8, 9}));
  std::filesystem::remove(path);
}

// As PyTorch's FileStore: the file is gone once every rank joined, so the
// next job can use the path; a file an earlier job left (its root gone) is
// not taken for the new job's, even by a rank that comes before rank 0
// writes the new one. And HORA_COMM_ID, which names a root for ids made
// from it, does not stop rank 0 from hosting the file's root.
TEST(CppApi, FileInitMethodLeavesThePathFreeForTheNextJob) {
  const auto path = std::filesystem::path(::testing::TempDir()) / ("hora-api-reuse-" + std::to_string(getpid()));
  const std::string method = "file://" + path.string();
  std::filesystem::remove(path);
  {
    World first = makeWorld(method, 2);
    EXPECT_FALSE(std::filesystem::exists(path)) << "the rendezvous file outlived init";
  }
  {
    std::ofstream(path) << "127.0.0.1:1 12345\n";  // what a job that died early leaves
  }
  ASSERT_EQ(setenv("HORA_COMM_ID", "127.0.0.1:1", 1), 0);
  std::vector<std::unique_ptr<hora::Communicator>> second(2);
  const auto start = Clock::now();
  onEachRank(2, [&](int rank) {
    if (rank == 0) std::this_thread::sleep_for(milliseconds(300));  // the stale file is read first
    second[rank] = hora::Communicator::fromInitMethod(method, rank, 2);
  });
  unsetenv("HORA_COMM_ID");
  EXPECT_LT(Clock::now() - start, seconds(5));
  std::vector<int> data = {1, 1};
  onEachRank(2, [&](int rank) { second[rank]->allReduce(&data[rank], &data[rank], 1, DataType::Int32, RedOp::Sum); });
  EXPECT_EQ(data, (std::vector<int>{2, 2}));
  std::filesystem::remove(path);
}

TEST(CppApi, AsyncCollectivesCompleteThroughTheirWork) {
  World world = makeWorld(freeTcpInitMethod(), 2);
  std::vector<std::vector<float>> data = {std::vector<float>(1000, 1.0f), std::vector<float>(1000, 2.0f)};
  // One thread issues for both ranks: the work runs on each rank's worker.
  std::vector<hora::WorkPtr> works;
  for (int rank = 0; rank < 2; ++rank)
    works.push_back(world[rank]->allReduceAsync(data[rank].data(), data[rank].data(), 1000,
                                                DataType::Float32, RedOp::Sum));
  for (auto& work : works) {
    EXPECT_EQ(finishWithin(*work, kFinish), nullptr);
    EXPECT_TRUE(work->test());
    EXPECT_NO_THROW(work->wait());
  }
  EXPECT_THAT(data[0], Each(3.0f));
  EXPECT_THAT(data[1], Each(3.0f));
}

TEST(CppApi, AsyncOperationsRunInIssueOrder) {
  // Each operation reads what the previous one wrote, so any reordering
  // shows in the results. Only the last Work is waited for.
  constexpr int kRanks = 3;
  constexpr std::size_t kCount = 4096;
  World world = makeWorld(freeTcpInitMethod(), kRanks);
  struct Buffers {
    std::vector<int> a = std::vector<int>(kCount);
    std::vector<int> b = std::vector<int>(kCount);
    std::vector<int> gathered = std::vector<int>(kCount * kRanks);
    std::vector<int> scattered = std::vector<int>(kCount);
  };
  std::vector<Buffers> buffers(kRanks);
  std::vector<std::vector<hora::WorkPtr>> works(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    auto& mine = buffers[rank];
    auto& comm = *world[rank];
    std::iota(mine.a.begin(), mine.a.end(), rank);
    works[rank].push_back(comm.allReduceAsync(mine.a.data(), mine.a.data(), kCount, DataType::Int32, RedOp::Sum));
    works[rank].push_back(comm.broadcastAsync(mine.a.data(), mine.b.data(), kCount, DataType::Int32, 1));
    works[rank].push_back(comm.allGatherAsync(mine.b.data(), mine.gathered.data(), kCount, DataType::Int32));
    works[rank].push_back(comm.reduceScatterAsync(mine.gathered.data(), mine.scattered.data(), kCount,
                                                  DataType::Int32, RedOp::Max));
  }
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_EQ(finishWithin(*works[rank].back(), kFinish), nullptr);
    for (auto& work : works[rank]) EXPECT_TRUE(work->test()) << "an earlier operation is still running";
  }
  for (int rank = 0; rank < kRanks; ++rank) {
    for (std::size_t i = 0; i < kCount; ++i) {
      int reduced = kRanks * int(i) + kRanks * (kRanks - 1) / 2;  // sum over ranks of i + rank
      ASSERT_EQ(buffers[rank].a[i], reduced) << "rank " << rank << " element " << i;
      ASSERT_EQ(buffers[rank].b[i], reduced);
      ASSERT_EQ(buffers[rank].scattered[i], reduced);
    }
  }
}

TEST(CppApi, FailedAsyncOperationReportsThroughItsWork) {
  World world = makeWorld(freeTcpInitMethod(), 2);
  std::vector<float> sent(10, 1.0f), received(20);
  auto send = world[0]->sendAsync(sent.data(), sent.size(), DataType::Float32, 1);
  auto recv = world[1]->recvAsync(received.data(), received.size(), DataType::Float32, 0);
  std::exception_ptr error = finishWithin(*recv, kFinish);
  EXPECT_TRUE(recv->test());
  expectErrorIn(error, ErrorKind::InvalidUsage, {"rank 0", "80", "40"});
  expectError([&] { recv->wait(); }, ErrorKind::InvalidUsage, {"rank 0"});
  finishWithin(*send, kFinish);  // rank 0's send may succeed or fail: it was sent
  // The receiving communicator is broken now: later operations fail at once
  // with the first error.
  expectError([&] { world[1]->allReduceAsync(received.data(), received.data(), 1, DataType::Float32, RedOp::Sum); },
              ErrorKind::InvalidUsage, {"earlier error", "rank 0"});
}

TEST(CppApi, InvalidArgumentsThrowAtTheCall) {
  World world = makeWorld(freeTcpInitMethod(), 2);
  auto& comm = *world[0];
  float value = 0;
  auto badType = static_cast<DataType>(42);
  auto badOp = static_cast<RedOp>(99);
  const auto kInvalid = ErrorKind::InvalidArgument;
  // Each names the rank that refused it (include/hora/error.h), as errors
  // of a job's several processes must.
  expectError([&] { comm.allReduceAsync(&value, &value, 1, badType, RedOp::Sum); }, kInvalid,
              {"rank 0: invalid data type 42"});
  expectError([&] { comm.allReduce(&value, &value, 1, DataType::Float32, badOp); }, kInvalid, {"rank 0:", "op", "99"});
  expectError([&] { world[1]->broadcastAsync(&value, &value, 1, DataType::Float32, 2); }, kInvalid,
              {"rank 1: root 2", "[0, 2)"});
  expectError([&] { world[1]->allToAllAsync(&value, &value, 1, badType); }, kInvalid, {"rank 1: invalid data type"});
  expectError([&] { comm.reduce(&value, &value, 1, DataType::Float32, RedOp::Sum, -1); }, kInvalid, {"root -1"});
  expectError([&] { comm.sendAsync(&value, 1, DataType::Float32, 5); }, kInvalid, {"peer 5"});
  expectError([&] { comm.recv(&value, 1, DataType::Float32, -2); }, kInvalid, {"peer -2"});
  // Buffers that overlap other than in place, refused at the call as by
  // nccl.h (not by the rank's worker after the call returned).
  std::vector<float> overlapping(8);
  expectError([&] { comm.allReduceAsync(overlapping.data(), overlapping.data() + 1, 4, DataType::Float32, RedOp::Sum); },
              kInvalid, {"overlap", "not in place"});
  expectError([&] { comm.allGather(overlapping.data() + 1, overlapping.data(), 2, DataType::Float32); }, kInvalid,
              {"AllGather", "overlap"});
  // A send to itself without its receive (nothing of a single call pairs
  // it) is refused at the call too, as ncclSend is outside a group.
  expectError([&] { comm.sendAsync(&value, 1, DataType::Float32, 0); }, ErrorKind::InvalidUsage,
              {"rank 0", "1 send(s) to itself", "0 receive(s)"});
  expectError([&] { comm.recv(&value, 1, DataType::Float32, 0); }, ErrorKind::InvalidUsage,
              {"rank 0", "0 send(s) to itself", "1 receive(s)"});
  // Argument errors leave the communicator usable.
  std::vector<float> data = {1.0f, 2.0f};
  onEachRank(2, [&](int rank) {
    std::vector<float> mine = data;
    world[rank]->allReduce(mine.data(), mine.data(), 2, DataType::Float32, RedOp::Max);
    EXPECT_EQ(mine, data);
  });
}

// The checks of the nccl.h API (tests/api/bad_input_test.cc): a NULL
// buffer with elements to move, and sizes past the address space.
TEST(CppApi, NullBuffersWithACountAreRefusedAtTheCall) {
  World world = makeWorld(freeTcpInitMethod(), 2);
  auto& comm = *world[0];  // rank 0, the root below
  float value = 0;
  const auto kFloat = DataType::Float32;
  const auto kInvalid = ErrorKind::InvalidArgument;
  expectError([&] { comm.allReduceAsync(nullptr, &value, 1, kFloat, RedOp::Sum); }, kInvalid, {"send", "NULL"});
  expectError([&] { comm.allReduce(&value, nullptr, 1, kFloat, RedOp::Sum); }, kInvalid, {"recv", "NULL"});
  expectError([&] { comm.broadcast(nullptr, &value, 1, kFloat, 0); }, kInvalid, {"send", "root", "NULL"});
  expectError([&] { comm.broadcastAsync(&value, nullptr, 1, kFloat, 1); }, kInvalid, {"recv", "NULL"});
  expectError([&] { comm.reduce(nullptr, &value, 1, kFloat, RedOp::Sum, 1); }, kInvalid, {"send", "NULL"});
  expectError([&] { comm.reduceAsync(&value, nullptr, 1, kFloat, RedOp::Sum, 0); }, kInvalid, {"recv", "root", "NULL"});
  expectError([&] { comm.reduceScatterAsync(nullptr, &value, 1, kFloat, RedOp::Sum); }, kInvalid, {"send", "NULL"});
  expectError([&] { comm.reduceScatter(&value, nullptr, 1, kFloat, RedOp::Sum); }, kInvalid, {"recv", "NULL"});
  expectError([&] { comm.allGather(nullptr, &value, 1, kFloat); }, kInvalid, {"send", "NULL"});
  expectError([&] { comm.allGatherAsync(&value, nullptr, 1, kFloat); }, kInvalid, {"recv", "NULL"});
  expectError([&] { comm.sendAsync(nullptr, 1, kFloat, 1); }, kInvalid, {"buf", "NULL"});
  expectError([&] { comm.recv(nullptr, 1, kFloat, 1); }, kInvalid, {"buf", "NULL"});
  // With nothing to move, NULL is fine (as in the nccl.h API).
  onEachRank(2, [&](int rank) { world[rank]->allReduce(nullptr, nullptr, 0, kFloat, RedOp::Sum); });
}

TEST(CppApi, CountsThatOverflowTheAddressSpaceAreRefusedAtTheCall) {
  World world = makeWorld(freeTcpInitMethod(), 2);
  auto& comm = *world[0];
  std::vector<float> in(4), out(8);
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  const auto kInvalid = ErrorKind::InvalidArgument;
  expectError([&] { comm.allReduce(in.data(), out.data(), huge, DataType::Float32, RedOp::Sum); }, kInvalid,
              {"count", "overflow"});
  expectError([&] { comm.broadcastAsync(in.data(), out.data(), huge, DataType::Int8, 0); }, kInvalid,
              {"overflow"});
  expectError([&] { comm.send(in.data(), huge / 4, DataType::Float64, 1); }, kInvalid, {"overflow"});
  // Each count fits, but a buffer of count x 2 ranks does not.
  const std::size_t perRank = huge / 4 / 2 + 1;
  expectError([&] { comm.allGatherAsync(in.data(), out.data(), perRank, DataType::Float32); }, kInvalid,
              {"overflow"});
  expectError([&] { comm.reduceScatter(in.data(), out.data(), perRank, DataType::Float32, RedOp::Sum); },
              kInvalid, {"overflow"});
  // Refused at the call: the communicator still works.
  onEachRank(2, [&](int rank) {
    std::vector<float> mine = {float(rank)};
    world[rank]->allReduce(mine.data(), mine.data(), 1, DataType::Float32, RedOp::Sum);
    EXPECT_EQ(mine[0], 1.0f);
  });
}

TEST(CppApi, BlockingFormsReturnWithTheResult) {
  constexpr int kRanks = 2;
  World world = makeWorld(freeTcpInitMethod(), kRanks);
  onEachRank(kRanks, [&](int rank) {
    auto& comm = *world[rank];
    const int peer = 1 - rank;
    std::vector<int> in = {rank + 1, 10 * (rank + 1)}, out(2);
    comm.reduce(in.data(), out.data(), 2, DataType::Int32, RedOp::Prod, 1);
    if (rank == 1) {
      EXPECT_EQ(out, (std::vector<int>{2, 200}));
    }
    std::vector<int> gathered(4);
    comm.allGather(in.data(), gathered.data(), 2, DataType::Int32);
    EXPECT_EQ(gathered, (std::vector<int>{1, 10, 2, 20}));
    int mine = 0;
    comm.reduceScatter(gathered.data(), &mine, 1, DataType::Int32, RedOp::Min);
    EXPECT_EQ(mine, gathered[rank]);
    // A matched exchange: the lower rank sends first.
    int message = 100 + rank, reply = 0;
    if (rank == 0) {
      comm.send(&message, 1, DataType::Int32, peer);
      comm.recv(&reply, 1, DataType::Int32, peer);
    } else {
      comm.recv(&reply, 1, DataType::Int32, peer);
      comm.send(&message, 1, DataType::Int32, peer);
    }
    EXPECT_EQ(reply, 100 + peer);
  });
}

// Ranks that disagree on a call fail alike: InvalidUsage, and no rank
// blamed as failed (failedRank -1), whether a rank found the mismatch or was
// told by the rank that did, so that no rank tries to shrink past a peer.
TEST(CppApi, AMismatchBlamesNoRankOnAnyRank) {
  constexpr int kRanks = 3;
  World world = makeWorld(freeTcpInitMethod(), kRanks);
  std::vector<int> kinds(kRanks, -2), failed(kRanks, -2);
  onEachRank(kRanks, [&](int rank) {
    // Past the direct schedule's sizes: a ring, where rank 0 hears only
    // from rank 2, which agrees with it, and learns of the mismatch by notice.
    std::vector<float> data(1 << 16, 1.0f);
    const std::size_t count = rank == 1 ? data.size() : data.size() / 2;  // rank 1 disagrees
    try {
      world[rank]->allReduce(data.data(), data.data(), count, DataType::Float32, RedOp::Sum);
    } catch (const hora::Error& error) {
      kinds[rank] = static_cast<int>(error.kind());
      failed[rank] = error.failedRank();
    }
  });
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(kinds[rank], static_cast<int>(ErrorKind::InvalidUsage)) << "rank " << rank;
    EXPECT_EQ(failed[rank], -1) << "rank " << rank;
  }
}

TEST(CppApi, BarrierReturnsOnlyWhenEveryRankArrived) {
  constexpr int kRanks = 3;
  constexpr milliseconds kLate{300};
  World world = makeWorld(freeTcpInitMethod(), kRanks);
  std::vector<long long> waited(kRanks);
  onEachRank(kRanks, [&](int rank) {
    if (rank == kRanks - 1) std::this_thread::sleep_for(kLate);
    auto start = Clock::now();
    world[rank]->barrier();
    waited[rank] = std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
  });
  for (int rank = 0; rank + 1 < kRanks; ++rank)
    EXPECT_GE(waited[rank], kLate.count() - 50) << "rank " << rank << " left the barrier early";
}

// A barrier runs where collectives run, stamped as a barrier: a rank that
// meets it with an all-reduce fails at once, as the barrier's rank does.
TEST(CppApi, BarrierAgainstACollectiveFailsAtOnceOnBothRanks) {
  constexpr int kRanks = 2;
  World world = makeWorld(freeTcpInitMethod(), kRanks);
  std::vector<std::string> texts(kRanks);
  std::vector<int> kinds(kRanks, -1);
  auto start = Clock::now();
  onEachRank(kRanks, [&](int rank) {
    std::vector<float> data(64, 1.0f);
    try {
      if (rank == 0) world[rank]->barrier();
      else world[rank]->allReduce(data.data(), data.data(), data.size(), DataType::Float32, RedOp::Sum);
    } catch (const hora::Error& error) {
      kinds[rank] = static_cast<int>(error.kind());
      texts[rank] = error.what();
    }
  });
  EXPECT_LT(std::chrono::duration_cast<milliseconds>(Clock::now() - start).count(), 5000);
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(kinds[rank], static_cast<int>(ErrorKind::InvalidUsage)) << "rank " << rank << ": " << texts[rank];
    EXPECT_THAT(texts[rank], HasSubstr("barrier")) << texts[rank];
    EXPECT_THAT(texts[rank], HasSubstr("AllReduce")) << texts[rank];
  }
}

// Tags are not matched (messages are taken in the order sent), but each
// message carries its tag: a receive of another tag than the message's,
// even of the same size, fails on both ranks instead of taking another
// message's bytes. Receives in the order sent get their own data.
TEST(CppApi, AReceiveOfAnotherTagThanTheMessagesFailsOnBothRanks) {
  constexpr int kRanks = 2;
  World world = makeWorld(freeTcpInitMethod(), kRanks);
  std::vector<float> first(4, 1.0f), second(4, 2.0f), a(4, 0.0f), b(4, 0.0f);
  onEachRank(kRanks, [&](int rank) {
    if (rank == 0) {
      world[rank]->send(first.data(), first.size(), DataType::Float32, 1, /*tag=*/5);
      world[rank]->send(second.data(), second.size(), DataType::Float32, 1, /*tag=*/7);
    } else {
      world[rank]->recv(a.data(), a.size(), DataType::Float32, 0, /*tag=*/5);
      world[rank]->recv(b.data(), b.size(), DataType::Float32, 0, /*tag=*/7);
    }
  });
  EXPECT_THAT(a, Each(1.0f));
  EXPECT_THAT(b, Each(2.0f));

  std::vector<std::string> texts(kRanks);
  std::vector<int> kinds(kRanks, -1);
  a.assign(4, 0.0f);
  onEachRank(kRanks, [&](int rank) {
    try {
      if (rank == 0) {
        // Small sends complete once buffered; the next call learns of the mismatch.
        world[rank]->send(first.data(), first.size(), DataType::Float32, 1, /*tag=*/5);
        world[rank]->send(second.data(), second.size(), DataType::Float32, 1, /*tag=*/7);
        world[rank]->allReduce(first.data(), first.data(), first.size(), DataType::Float32, RedOp::Sum);
      } else {
        world[rank]->recv(a.data(), a.size(), DataType::Float32, 0, /*tag=*/7);
      }
    } catch (const hora::Error& error) {
      kinds[rank] = static_cast<int>(error.kind());
      texts[rank] = error.what();
    }
  });
  EXPECT_THAT(a, Each(0.0f)) << "the message of tag 5 was taken by the receive of tag 7";
  EXPECT_EQ(kinds[1], static_cast<int>(ErrorKind::InvalidUsage)) << texts[1];
  EXPECT_THAT(texts[1], HasSubstr("tag 7 here, 5 at rank 0")) << texts[1];
  EXPECT_EQ(kinds[0], static_cast<int>(ErrorKind::InvalidUsage)) << texts[0];
  EXPECT_THAT(texts[0], HasSubstr("tag 7 here, 5 at rank 0")) << texts[0];
}

// A rank's messages to itself pair in issue order too, tags compared.
TEST(CppApi, AMessageToItselfOfAnotherTagIsRefused) {
  World world = makeWorld(freeTcpInitMethod(), 1);
  std::vector<float> out(3, 1.0f), in(3, 0.0f);
  using Transfer = hora::Communicator::Transfer;
  const std::vector<Transfer> transfers = {{Transfer::Direction::Send, out.data(), out.size(), 0, 1},
                                           {Transfer::Direction::Recv, in.data(), in.size(), 0, 2}};
  try {
    world[0]->exchangeAsync(transfers, DataType::Float32)->wait();
    ADD_FAILURE() << "a receive of tag 2 took the message of tag 1";
  } catch (const hora::Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidUsage) << error.what();
    EXPECT_THAT(error.what(), HasSubstr("with tag 1 meets a receive with tag 2")) << error.what();
  }
  EXPECT_THAT(in, Each(0.0f));
}

TEST(CppApi, SynchronizeWaitsForQueuedWork) {
  World world = makeWorld(freeTcpInitMethod(), 2);
  std::vector<std::vector<float>> data(2, std::vector<float>(1 << 16, 1.0f));
  std::vector<hora::WorkPtr> works;
  for (int round = 0; round < 3; ++round)
    for (int rank = 0; rank < 2; ++rank)
      works.push_back(world[rank]->allReduceAsync(data[rank].data(), data[rank].data(), data[rank].size(),
                                                  DataType::Float32, RedOp::Sum));
  onEachRank(2, [&](int rank) { world[rank]->synchronize(); });
  for (auto& work : works) EXPECT_TRUE(work->test());
  EXPECT_THAT(data[0], Each(8.0f));
}

TEST(CppApi, AbortEndsABlockedOperationPromptly) {
  World world = makeWorld(freeTcpInitMethod(), 2);
  std::vector<float> data(1 << 16, 1.0f);
  // Rank 1 never joins the all-reduce: only the abort can end rank 0's wait.
  auto work = world[0]->allReduceAsync(data.data(), data.data(), data.size(), DataType::Float32, RedOp::Sum);
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(work->test());
  auto start = Clock::now();
  world[0]->abort();
  std::exception_ptr error = finishWithin(*work, seconds(5));
  EXPECT_LT(std::chrono::duration_cast<milliseconds>(Clock::now() - start).count(), 2000);
  expectErrorIn(error, ErrorKind::InvalidUsage, {"abort"});
  expectError([&] { world[0]->allReduce(data.data(), data.data(), 1, DataType::Float32, RedOp::Sum); },
              ErrorKind::InvalidUsage, {"aborted"});
  // Waiting on an aborted communicator says so, as a call does.
  expectError([&] { world[0]->synchronize(); }, ErrorKind::InvalidUsage, {"aborted"});
  expectError([&] { world[0]->barrier(); }, ErrorKind::InvalidUsage, {"aborted"});
}

// A watchdog and an error handler may abort one communicator at the same
// moment: both calls return, once its worker thread has ended (one of them
// used to wait for ever for a thread the other had joined).
TEST(CppApi, TwoThreadsAbortingAtOnceBothReturn) {
  for (int attempt = 0; attempt < 30; ++attempt) {
    World world = makeWorld(freeTcpInitMethod(), 1);
    int in = 1, out = 0;
    world[0]->allReduceAsync(&in, &out, 1, DataType::Int32, RedOp::Sum)->wait();  // the worker runs
    std::atomic<int> ready{0};
    std::vector<std::thread> aborting;
    for (int k = 0; k < 2; ++k) {
      aborting.emplace_back([&] {
        ready.fetch_add(1);
        while (ready.load() < 2) {
        }
        world[0]->abort();
      });
    }
    const auto start = Clock::now();
    for (std::thread& thread : aborting) thread.join();
    ASSERT_LT(Clock::now() - start, kFinish) << "attempt " << attempt;
  }
}

TEST(CppApi, PeerThatNeverJoinsFailsInitWithinTheTimeout) {
  hora::CommunicatorOptions options;
  options.timeout = seconds(1);
  auto start = Clock::now();
  // Only rank 1 of 2: rank 0 (which hosts the rendezvous) never comes.
  expectError([&] { hora::Communicator::fromInitMethod(freeTcpInitMethod(), 1, 2, options); },
              ErrorKind::Remote, {"127.0.0.1"});
  EXPECT_LT(std::chrono::duration_cast<milliseconds>(Clock::now() - start).count(), 4000);
}

// The root of a unique id waits HORA_TIMEOUT (10 s here) for the ranks; rank
// 0 was given 1 s (as init_process_group(timeout=...) gives its own). The
// root answers by the earliest deadline of the ranks that came, so rank 0
// hears which rank never came instead of timing out on the root itself.
TEST(CppApi, PeerThatNeverJoinsIsNamedWithinTheProgramsShorterTimeout) {
  const hora::Communicator::UniqueId id = hora::Communicator::newUniqueId();
  hora::CommunicatorOptions options;
  options.timeout = seconds(1);
  auto start = Clock::now();
  expectError([&] { hora::Communicator::fromUniqueId(id, 0, 2, options); }, ErrorKind::Remote,
              {"never arrived: 1"});
  EXPECT_LT(std::chrono::duration_cast<milliseconds>(Clock::now() - start).count(), 4000);
}

TEST(CppApi, BadInitMethodsAreRefused) {
  const auto kInvalid = ErrorKind::InvalidArgument;
  auto init = [](const std::string& method, int rank = 0, int size = 1) {
    return [=] { hora::Communicator::fromInitMethod(method, rank, size); };
  };
  expectError(init(""), kInvalid, {"unknown init method", "env://", "tcp://", "file://"});
  expectError(init("mpi://world"), kInvalid, {"unknown init method 'mpi://world'"});
  expectError(init("TCP://127.0.0.1:1234"), kInvalid, {"unknown init method"});
  expectError(init("tcp://127.0.0.1"), kInvalid, {"127.0.0.1", "port"});
  expectError(init("tcp://127.0.0.1:http"), kInvalid, {"rank 0: ", "port"});
  // Port 0 would make every rank wait for a root no one can find.
  expectError(init("tcp://127.0.0.1:0"), kInvalid, {"rank 0: ", "port 0"});
  expectError(init("tcp://127.0.0.1:99999"), kInvalid, {"port"});
  expectError(init("tcp://"), kInvalid, {"port"});
  expectError(init("tcp://no-such-host.invalid:1234"), kInvalid, {"no-such-host.invalid"});
  expectError(init("tcp://127.0.0.1:1234", 2, 2), kInvalid, {"rank 2", "[0, 2)"});
  expectError(init("tcp://127.0.0.1:1234", 0, 0), kInvalid, {"world size", "0"});
}

}  // namespace
}  // namespace hora_api_test
