// hora's C++ API with ranks as threads: communicators made from a unique id
// handed around by the caller, and the block-moving calls (all-to-all,
// gather, scatter, grouped point-to-point transfers with uneven sizes),
// checked element by element, and their bad arguments.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "cpp_world.h"

namespace hora_api_test {
namespace {

using hora::Communicator;
using hora::DataType;
using ::testing::HasSubstr;
using Transfer = hora::Communicator::Transfer;
constexpr auto kFinish = std::chrono::seconds(15);

World worldFromUniqueId(int size, const hora::CommunicatorOptions& options = {}) {
  const Communicator::UniqueId id = Communicator::newUniqueId();
  World world(size);
  std::vector<std::exception_ptr> errors(size);
  onEachRank(size, [&](int rank) {
    try {
      world[rank] = Communicator::fromUniqueId(id, rank, size, options);
    } catch (...) {
      errors[rank] = std::current_exception();
    }
  });
  for (auto& error : errors)
    if (error) std::rethrow_exception(error);
  return world;
}

void waitFor(hora::Work& work) {
  if (auto error = finishWithin(work, kFinish)) std::rethrow_exception(error);
}

// The value rank `from` puts in element `i` of the block it sends to rank `to`.
std::int32_t valueOf(int from, int to, std::size_t i) {
  return from * 1000000 + to * 1000 + static_cast<std::int32_t>(i);
}

TEST(CppExchange, UniqueIdMadeByOneRankJoinsEveryRank) {
  World world = worldFromUniqueId(3);
  std::vector<std::vector<std::int64_t>> data(3);
  onEachRank(3, [&](int rank) {
    data[rank] = {rank + 1, 10};
    world[rank]->allReduce(data[rank].data(), data[rank].data(), 2, DataType::Int64,
                           hora::RedOp::Sum);
  });
  for (const auto& values : data) EXPECT_EQ(values, (std::vector<std::int64_t>{6, 30}));
}

TEST(CppExchange, GarbageUniqueIdOrRankOutsideTheWorldIsRefused) {
  Communicator::UniqueId garbage;
  garbage.fill('x');
  try {
    Communicator::fromUniqueId(garbage, 0, 1);
    ADD_FAILURE() << "accepted a garbage id";
  } catch (const hora::Error& error) {
    EXPECT_EQ(error.kind(), hora::ErrorKind::InvalidArgument) << error.what();
  }
  EXPECT_THROW(Communicator::fromUniqueId(Communicator::newUniqueId(), 2, 2), hora::Error);
}

TEST(CppExchange, AllToAllGatherAndScatterMoveEveryBlockToItsPlace) {
  const int n = 3;
  World world = worldFromUniqueId(n);
  const std::size_t count = 5;
  onEachRank(n, [&](int rank) {
    std::vector<std::int32_t> send(n * count), recv(n * count, -1);
    for (int to = 0; to < n; ++to)
      for (std::size_t i = 0; i < count; ++i) send[to * count + i] = valueOf(rank, to, i);
    waitFor(*world[rank]->allToAllAsync(send.data(), recv.data(), count, DataType::Int32));
    for (int from = 0; from < n; ++from)
      for (std::size_t i = 0; i < count; ++i)
        EXPECT_EQ(recv[from * count + i], valueOf(from, rank, i)) << "all-to-all at rank " << rank;

    const int root = 1;
    std::vector<std::int32_t> mine(count), gathered(n * count, -1);
    for (std::size_t i = 0; i < count; ++i) mine[i] = valueOf(rank, root, i);
    waitFor(*world[rank]->gatherAsync(mine.data(), rank == root ? gathered.data() : nullptr, count,
                                      DataType::Int32, root));
    if (rank == root)
      for (int from = 0; from < n; ++from)
        for (std::size_t i = 0; i < count; ++i)
          EXPECT_EQ(gathered[from * count + i], valueOf(from, root, i));

    std::vector<std::int32_t> scattered(count, -1);
    waitFor(*world[rank]->scatterAsync(rank == root ? send.data() : nullptr, scattered.data(),
                                       count, DataType::Int32, root));
    for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(scattered[i], valueOf(root, rank, i));
  });
}

// Rank r sends r + to + 1 elements to rank `to` (itself included): every
// pair has its own size, as all_to_all_single with split sizes needs.
TEST(CppExchange, GroupedTransfersWithUnevenSizesIncludingSelf) {
  const int n = 4;
  World world = worldFromUniqueId(n);
  auto size = [](int from, int to) { return static_cast<std::size_t>(from + to + 1); };
  onEachRank(n, [&](int rank) {
    std::vector<std::vector<std::int32_t>> out(n), in(n);
    std::vector<Transfer> transfers;
    for (int peer = 0; peer < n; ++peer) {
      out[peer].resize(size(rank, peer));
      for (std::size_t i = 0; i < out[peer].size(); ++i) out[peer][i] = valueOf(rank, peer, i);
      in[peer].assign(size(peer, rank), -1);
      transfers.push_back({Transfer::Direction::Send, out[peer].data(), out[peer].size(), peer});
      transfers.push_back({Transfer::Direction::Recv, in[peer].data(), in[peer].size(), peer});
    }
    waitFor(*world[rank]->exchangeAsync(transfers, DataType::Int32));
    for (int from = 0; from < n; ++from)
      for (std::size_t i = 0; i < in[from].size(); ++i)
        EXPECT_EQ(in[from][i], valueOf(from, rank, i));
  });
}

// Each rank sends before it receives, ungrouped, more than a connection
// holds (the documented limit of sendAsync): both wait for each other until
// the deadline, as under NCCL, and the error says how to order the calls.
TEST(CppExchange, SendsBeforeReceivesTimeOutSayingToGroupThem) {
  hora::CommunicatorOptions options;
  options.timeout = std::chrono::seconds(1);
  World world = worldFromUniqueId(2, options);
  std::vector<std::string> errors(2);
  onEachRank(2, [&](int rank) {
    const int peer = 1 - rank;
    std::vector<float> out(16 << 20, 1.0f), in(16 << 20);
    auto send = world[rank]->sendAsync(out.data(), out.size(), DataType::Float32, peer);
    auto recv = world[rank]->recvAsync(in.data(), in.size(), DataType::Float32, peer);
    if (auto error = finishWithin(*send, kFinish)) {
      try {
        std::rethrow_exception(error);
      } catch (const hora::Error& e) {
        errors[rank] = e.what();
      }
    }
    finishWithin(*recv, kFinish);
  });
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_THAT(errors[rank], HasSubstr("issue the sends and receives in one group")) << "rank " << rank;
}

TEST(CppExchange, EmptyExchangeAndZeroCountsFinish) {
  World world = worldFromUniqueId(2);
  onEachRank(2, [&](int rank) {
    waitFor(*world[rank]->exchangeAsync({}, DataType::Float32));
    waitFor(*world[rank]->allToAllAsync(nullptr, nullptr, 0, DataType::Float32));
    int peer = 1 - rank;
    waitFor(*world[rank]->exchangeAsync({{Transfer::Direction::Send, nullptr, 0, peer},
                                         {Transfer::Direction::Recv, nullptr, 0, peer}},
                                        DataType::Float32));
  });
}

TEST(CppExchange, BadArgumentsAreRefusedBeforeAnythingIsQueued) {
  World world = worldFromUniqueId(2);
  std::vector<float> buffer(8);
  onEachRank(2, [&](int rank) {
    auto& c = *world[rank];
    EXPECT_THROW(c.exchangeAsync({{Transfer::Direction::Send, buffer.data(), 1, 2}},
                                 DataType::Float32),
                 hora::Error);
    EXPECT_THROW(c.exchangeAsync({{Transfer::Direction::Recv, nullptr, 3, 0}}, DataType::Float32),
                 hora::Error);
    EXPECT_THROW(c.allToAllAsync(buffer.data(), buffer.data(), 4, DataType::Float32), hora::Error);
    EXPECT_THROW(c.gatherAsync(buffer.data(), buffer.data(), 1, DataType::Float32, 5), hora::Error);
    EXPECT_THROW(c.scatterAsync(buffer.data(), nullptr, 1, DataType::Float32, 0), hora::Error);
    EXPECT_THROW(c.allToAllAsync(buffer.data(), buffer.data() + 4, 1, static_cast<DataType>(99)),
                 hora::Error);
    // At the root, buffers that overlap other than in place (a gather's
    // send buffer must be block `root` of its receive buffer, a scatter's
    // receive buffer block `root` of its send buffer): refused at the
    // call, before anything is queued. (Elsewhere the root's other buffer
    // is not used, and may lie anywhere.)
    if (rank == 0) {
      EXPECT_THROW(c.gatherAsync(buffer.data() + 1, buffer.data(), 2, DataType::Float32, 0), hora::Error);
      EXPECT_THROW(c.scatterAsync(buffer.data(), buffer.data() + 1, 2, DataType::Float32, 0), hora::Error);
    }
    // The communicator still works afterwards.
    float value = 1.0f;
    c.allReduce(&value, &value, 1, DataType::Float32, hora::RedOp::Sum);
    EXPECT_EQ(value, 2.0f);
  });
}

}  // namespace
}  // namespace hora_api_test
