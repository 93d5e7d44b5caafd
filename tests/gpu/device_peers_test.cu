// Point-to-point work on device buffers, ranks as threads on one GPU:
// ncclSend/ncclRecv around the ring at counts 0, 1, odd and several MiB,
// aligned and not; all-to-all, gather and scatter against references
// computed here; a rank's send to itself; sizes that disagree reported by
// ncclCommGetAsyncError naming the peer; and what the kernel cannot run
// refused before anything runs.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_ok.h"
#include "device_ranks.h"
#include "log_watch.h"
#include "nccl.h"

namespace {

// Element j of the block rank `from` gives rank `to`: distinct everywhere.
std::int32_t valueOf(int from, int to, std::size_t j) {
  return static_cast<std::int32_t>(from * 100000 + to * 1000 + static_cast<int>(j % 1000));
}

std::vector<std::int32_t> blockOf(int from, int to, std::size_t count) {
  std::vector<std::int32_t> block(count);
  for (std::size_t j = 0; j < count; ++j) block[j] = valueOf(from, to, j);
  return block;
}

void syncAll(const Ranks& ranks) {
  for (int r = 0; r < ranks.size(); ++r) CUDA_OK(cudaStreamSynchronize(ranks.stream(r)));
  for (int r = 0; r < ranks.size(); ++r) {
    ncclResult_t async = ncclInternalError;
    NCCL_OK(ncclCommGetAsyncError(ranks.comm(r), &async));
    ASSERT_EQ(async, ncclSuccess) << "rank " << r << ": " << ncclGetLastError(ranks.comm(r));
  }
}

// Rank r sends `count` bytes to r + 1 and receives from r - 1, in one group.
// In the gpu suite's device_peers_host_fifos run, every rank's FIFOs must
// also have gone to pinned host memory.
TEST(DevicePeers, SendAndReceiveAroundTheRing) {
  const LogWatch log;
  for (int n : {2, 3, 4}) {
    Ranks ranks(n);
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1031}, std::size_t{(3u << 20) + 5}})
      for (std::size_t shift : {std::size_t{0}, std::size_t{1}}) {
        std::vector<unsigned char*> send(n), recv(n);
        for (int r = 0; r < n; ++r) {
          CUDA_OK(cudaMalloc(&send[r], count + shift + 1));
          CUDA_OK(cudaMalloc(&recv[r], count + shift + 1));
          CUDA_OK(cudaMemset(recv[r], 0xA5, count + shift + 1));
          std::vector<unsigned char> input(count);
          for (std::size_t j = 0; j < count; ++j) input[j] = static_cast<unsigned char>(r * 31 + j * 7);
          CUDA_OK(cudaMemcpy(send[r] + shift, input.data(), count, cudaMemcpyHostToDevice));
        }
        UPLOADS_LANDED();
        NCCL_OK(ncclGroupStart());
        for (int r = 0; r < n; ++r) {
          NCCL_OK(ncclSend(send[r] + shift, count, ncclUint8, (r + 1) % n, ranks.comm(r), ranks.stream(r)));
          NCCL_OK(ncclRecv(recv[r] + shift, count, ncclUint8, (r + n - 1) % n, ranks.comm(r), ranks.stream(r)));
        }
        NCCL_OK(ncclGroupEnd());
        syncAll(ranks);
        if (HasFatalFailure()) return;
        for (int r = 0; r < n; ++r) {
          std::vector<unsigned char> got(count + 1);
          CUDA_OK(cudaMemcpy(got.data(), recv[r] + shift, count + 1, cudaMemcpyDeviceToHost));
          const int from = (r + n - 1) % n;
          for (std::size_t j = 0; j < count; ++j)
            ASSERT_EQ(got[j], static_cast<unsigned char>(from * 31 + j * 7))
                << n << " ranks, count " << count << ", rank " << r << ", byte " << j;
          EXPECT_EQ(got[count], 0xA5) << "rank " << r << " was written past its receive buffer";
          cudaFree(send[r]);
          cudaFree(recv[r]);
        }
      }
  }
  if (p2pDisabledAndLogged()) {
    EXPECT_EQ(log.linesWith(kFifosInHostMemoryLine), 2 + 3 + 4);
  }
}

// ncclAlltoAll, ncclGather and ncclScatter, cut into sends and receives.
TEST(DevicePeers, AllToAllGatherAndScatterMatchTheReference) {
  const std::size_t count = 1031;
  const std::size_t bytes = count * sizeof(std::int32_t);
  for (int n : {1, 2, 3, 4}) {
    Ranks ranks(n);
    std::vector<std::int32_t*> send(n), recv(n);
    for (int r = 0; r < n; ++r) {
      CUDA_OK(cudaMalloc(&send[r], bytes * n));
      CUDA_OK(cudaMalloc(&recv[r], bytes * n));
      for (int to = 0; to < n; ++to)
        CUDA_OK(cudaMemcpy(send[r] + count * to, blockOf(r, to, count).data(), bytes, cudaMemcpyHostToDevice));
    }
    UPLOADS_LANDED();
    auto expectBlock = [&](int r, int block, int from, int to) {
      std::vector<std::int32_t> got(count);
      CUDA_OK(cudaMemcpy(got.data(), recv[r] + count * block, bytes, cudaMemcpyDeviceToHost));
      EXPECT_EQ(got, blockOf(from, to, count)) << n << " ranks, rank " << r << ", block " << block;
    };

    NCCL_OK(ncclGroupStart());
    for (int r = 0; r < n; ++r)
      NCCL_OK(ncclAlltoAll(send[r], recv[r], count, ncclInt32, ranks.comm(r), ranks.stream(r)));
    NCCL_OK(ncclGroupEnd());
    syncAll(ranks);
    for (int r = 0; r < n; ++r)
      for (int p = 0; p < n; ++p) expectBlock(r, p, p, r);

    const int root = n - 1;
    NCCL_OK(ncclGroupStart());
    for (int r = 0; r < n; ++r)
      NCCL_OK(ncclGather(send[r] + count * root, recv[r], count, ncclInt32, root, ranks.comm(r), ranks.stream(r)));
    NCCL_OK(ncclGroupEnd());
    syncAll(ranks);
    for (int p = 0; p < n; ++p) expectBlock(root, p, p, root);

    NCCL_OK(ncclGroupStart());
    for (int r = 0; r < n; ++r)
      NCCL_OK(ncclScatter(send[r], recv[r], count, ncclInt32, 0, ranks.comm(r), ranks.stream(r)));
    NCCL_OK(ncclGroupEnd());
    syncAll(ranks);
    for (int r = 0; r < n; ++r) expectBlock(r, 0, 0, r);

    for (int r = 0; r < n; ++r) cudaFree(send[r]), cudaFree(recv[r]);
    if (HasFailure()) return;
  }
}

// A send to itself is a copy into the rank's own receive.
TEST(DevicePeers, ARankSendsToItself) {
  Ranks ranks(2);
  const std::size_t count = 4099;
  std::vector<std::int32_t*> send(2), recv(2);
  for (int r = 0; r < 2; ++r) {
    CUDA_OK(cudaMalloc(&send[r], count * sizeof(std::int32_t)));
    CUDA_OK(cudaMalloc(&recv[r], count * sizeof(std::int32_t)));
    CUDA_OK(cudaMemcpy(send[r], blockOf(r, r, count).data(), count * sizeof(std::int32_t), cudaMemcpyHostToDevice));
  }
  UPLOADS_LANDED();
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < 2; ++r) {
    NCCL_OK(ncclSend(send[r], count, ncclInt32, r, ranks.comm(r), ranks.stream(r)));
    NCCL_OK(ncclRecv(recv[r], count, ncclInt32, r, ranks.comm(r), ranks.stream(r)));
  }
  NCCL_OK(ncclGroupEnd());
  syncAll(ranks);
  for (int r = 0; r < 2; ++r) {
    std::vector<std::int32_t> got(count);
    CUDA_OK(cudaMemcpy(got.data(), recv[r], count * sizeof(std::int32_t), cudaMemcpyDeviceToHost));
    EXPECT_EQ(got, blockOf(r, r, count)) << "rank " << r;
    cudaFree(send[r]);
    cudaFree(recv[r]);
  }
}

// A receive that expects more than the peer sends: the receiving kernel
// sees a last piece of the wrong size, stops, and ncclCommGetAsyncError
// names the peer.
TEST(DevicePeers, SizesThatDisagreeAreReportedNamingThePeer) {
  Ranks ranks(2);
  unsigned char *send = nullptr, *recv = nullptr;
  CUDA_OK(cudaMalloc(&send, 4000));
  CUDA_OK(cudaMalloc(&recv, 4000));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(send, 1000, ncclUint8, 1, ranks.comm(0), ranks.stream(0)));
  NCCL_OK(ncclRecv(recv, 2000, ncclUint8, 0, ranks.comm(1), ranks.stream(1)));
  NCCL_OK(ncclGroupEnd());
  CUDA_OK(cudaStreamSynchronize(ranks.stream(1)));
  ncclResult_t async = ncclSuccess;
  NCCL_OK(ncclCommGetAsyncError(ranks.comm(1), &async));
  EXPECT_EQ(async, ncclInvalidUsage);
  const std::string message = ncclGetLastError(ranks.comm(1));
  EXPECT_NE(message.find("rank 0"), std::string::npos) << message;
  ranks.abortAll();
  cudaFree(send);
  cudaFree(recv);
}

// What the kernel cannot run is refused before anything runs, and the
// communicator stays usable.
TEST(DevicePeers, WhatCannotRunIsRefusedClearly) {
  Ranks ranks(2);
  unsigned char* buffer = nullptr;
  CUDA_OK(cudaMalloc(&buffer, 64));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(buffer, 8, ncclUint8, 1, ranks.comm(0), ranks.stream(0)));
  NCCL_OK(ncclSend(buffer, 8, ncclUint8, 1, ranks.comm(0), ranks.stream(0)));
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(ranks.comm(0))).find("two sends to rank 1"), std::string::npos)
      << ncclGetLastError(ranks.comm(0));
  // Still usable: a well-formed exchange runs.
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(buffer, 8, ncclUint8, 1, ranks.comm(0), ranks.stream(0)));
  NCCL_OK(ncclRecv(buffer + 32, 8, ncclUint8, 0, ranks.comm(1), ranks.stream(1)));
  NCCL_OK(ncclGroupEnd());
  syncAll(ranks);
  cudaFree(buffer);
}

}  // namespace
