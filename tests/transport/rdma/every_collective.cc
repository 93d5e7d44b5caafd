#include "every_collective.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace hora::transport::rdma::testing {

void onEachRank(int nranks, const std::function<void(int, ncclComm_t)>& body) {
  std::vector<ncclComm_t> comms(nranks);
  ASSERT_EQ(ncclCommInitAll(comms.data(), nranks, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) threads.emplace_back([&, r] { body(r, comms[r]); });
  for (auto& thread : threads) thread.join();
  for (ncclComm_t comm : comms) ncclCommDestroy(comm);
}

std::int32_t input(int rank, std::size_t i) { return static_cast<std::int32_t>((rank * 31 + i * 7) % 1000); }

void checkEveryCollective(int rank, int n, ncclComm_t comm, const std::vector<std::size_t>& counts) {
  for (std::size_t count : counts) {
    const std::string where = "rank " + std::to_string(rank) + " count " + std::to_string(count);
    std::vector<std::int32_t> in(count * n), out(count * n, -1);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = input(rank, i);
    auto sumOver = [&](std::size_t i) {
      std::int64_t sum = 0;
      for (int q = 0; q < n; ++q) sum += input(q, i);
      return static_cast<std::int32_t>(sum);
    };
    // All-reduce.
    ASSERT_EQ(ncclAllReduce(in.data(), out.data(), count, ncclInt32, ncclSum, comm, nullptr), ncclSuccess)
        << where << ": " << ncclGetLastError(comm);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], sumOver(i)) << where << " all-reduce " << i;
    // Reduce-scatter: block `rank` of the sums.
    ASSERT_EQ(ncclReduceScatter(in.data(), out.data(), count, ncclInt32, ncclSum, comm, nullptr), ncclSuccess)
        << where;
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(out[i], sumOver(rank * count + i)) << where << " reduce-scatter " << i;
    // All-gather.
    ASSERT_EQ(ncclAllGather(in.data(), out.data(), count, ncclInt32, comm, nullptr), ncclSuccess) << where;
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[q * count + i], input(q, i)) << where << " all-gather from " << q;
    // Broadcast and reduce from the last rank.
    const int root = n - 1;
    ASSERT_EQ(ncclBroadcast(in.data(), out.data(), count, ncclInt32, root, comm, nullptr), ncclSuccess) << where;
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], input(root, i)) << where << " broadcast";
    ASSERT_EQ(ncclReduce(in.data(), out.data(), count, ncclInt32, ncclSum, root, comm, nullptr), ncclSuccess)
        << where;
    if (rank == root) {
      for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], sumOver(i)) << where << " reduce";
    }
    // Gather to rank 0 and scatter from it: rank q's input is block q of
    // the root's output; block r of the root's input goes to rank r.
    ASSERT_EQ(ncclGather(in.data(), out.data(), count, ncclInt32, 0, comm, nullptr), ncclSuccess) << where;
    if (rank == 0) {
      for (int q = 0; q < n; ++q)
        for (std::size_t i = 0; i < count; ++i)
          ASSERT_EQ(out[q * count + i], input(q, i)) << where << " gather from " << q;
    }
    ASSERT_EQ(ncclScatter(in.data(), out.data(), count, ncclInt32, 0, comm, nullptr), ncclSuccess) << where;
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(out[i], input(0, rank * count + i)) << where << " scatter " << i;
    // All-to-all: block q of rank r's input goes to rank q, block r.
    ASSERT_EQ(ncclAlltoAll(in.data(), out.data(), count, ncclInt32, comm, nullptr), ncclSuccess) << where;
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[q * count + i], input(q, rank * count + i)) << where << " all-to-all from " << q;
    // Send to the next rank, receive from the previous one.
    ncclGroupStart();
    ncclSend(in.data(), count, ncclInt32, (rank + 1) % n, comm, nullptr);
    ncclRecv(out.data(), count, ncclInt32, (rank + n - 1) % n, comm, nullptr);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << where;
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], input((rank + n - 1) % n, i)) << where << " recv";
  }
}

}  // namespace hora::transport::rdma::testing
