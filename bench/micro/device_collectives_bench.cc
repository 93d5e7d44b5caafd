// Collectives on device buffers, several ranks as threads on one GPU
// (ncclCommInitAll with the device repeated), in nccl-tests' columns: time
// per call, algbw and busbw (busbw as nccl-tests defines it). Each row also
// shows the memory limit: ranks that share a GPU share its memory
// bandwidth, so a collective can go no faster than the bytes all ranks must
// read and write there (inputs, outputs, and every FIFO slot written once
// and read once) over the device-to-device copy bandwidth measured in the
// same run (bytes read plus bytes written).
//
//   hora-bench-device-collectives [ranks (default 2)] [max bytes (default 256M)] [iterations (default 20)]
//
// Times are host wall clock over `iterations` back-to-back calls of every
// rank (one group per call) after warm-up, divided by `iterations`: each
// call's launch cost is in the figure, as in nccl-tests without graphs.
//
// Last, where a small call's time goes: an 8-byte all-reduce called call by
// call, the same replayed from CUDA graphs (one per rank holding 100 calls,
// so the host's launch cost is paid once per 100 calls), and an 8-byte
// cudaMemsetAsync on every rank's stream (the cost of one launch per rank).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "nccl.h"

namespace {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}
void check(ncclResult_t result, const char* what) {
  if (result == ncclSuccess) return;
  std::fprintf(stderr, "%s failed: %s: %s\n", what, ncclGetErrorString(result), ncclGetLastError(nullptr));
  std::exit(1);
}

enum class Kind { AllReduce, AllGather, ReduceScatter, Broadcast };

struct Model {
  const char* name;
  double busFactor;      // busbw = algbw x this (nccl-tests)
  double trafficFactor;  // bytes each rank reads and writes in GPU memory, per byte of size
};

Model modelOf(Kind kind, int n) {
  const double hops = static_cast<double>(n - 1) / n;
  switch (kind) {
    case Kind::AllReduce: return {"all_reduce", 2 * hops, 2 + 4 * hops};
    case Kind::AllGather: return {"all_gather", hops, 1 + 1.0 / n + 2 * hops};
    case Kind::ReduceScatter: return {"reduce_scatter", hops, 1 + 1.0 / n + 2 * hops};
    case Kind::Broadcast: return {"broadcast", 1, 3};
  }
  return {"?", 1, 1};
}

double copyBandwidth(void* a, void* b, std::size_t bytes) {
  check(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 10;
  return 2.0 * static_cast<double>(bytes) / seconds;
}

// Seconds per round of `round` over `rounds` rounds, after one untimed.
template <typename Round>
double secondsPerRound(int rounds, Round round) {
  round();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i) round();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / rounds;
}

void smallCallCosts(const std::vector<ncclComm_t>& comms, const std::vector<cudaStream_t>& streams,
                    const std::vector<void*>& send, const std::vector<void*>& recv) {
  const int n = static_cast<int>(comms.size());
  const int callsPerGraph = 100;
  auto allReduce8 = [&] {
    check(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < n; ++r)
      check(ncclAllReduce(send[r], recv[r], 2, ncclFloat32, ncclSum, comms[r], streams[r]), "ncclAllReduce");
    check(ncclGroupEnd(), "ncclGroupEnd");
  };
  const double direct = secondsPerRound(1000, allReduce8);

  std::vector<cudaGraphExec_t> graphs(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    check(cudaStreamBeginCapture(streams[r], cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  for (int i = 0; i < callsPerGraph; ++i) allReduce8();
  for (int r = 0; r < n; ++r) {
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(streams[r], &graph), "cudaStreamEndCapture");
    check(cudaGraphInstantiate(&graphs[r], graph, 0), "cudaGraphInstantiate");
    cudaGraphDestroy(graph);
  }
  const double replayed = secondsPerRound(20, [&] {
    for (int r = 0; r < n; ++r) check(cudaGraphLaunch(graphs[r], streams[r]), "cudaGraphLaunch");
  }) / callsPerGraph;
  for (cudaGraphExec_t graph : graphs) cudaGraphExecDestroy(graph);

  const double launches = secondsPerRound(1000, [&] {
    for (int r = 0; r < n; ++r) check(cudaMemsetAsync(recv[r], 0, 8, streams[r]), "cudaMemsetAsync");
  });
  std::printf("# 8-byte all-reduce, %d rank(s): %.1f us per call; %.1f us per call replayed from CUDA graphs; "
              "one 8-byte cudaMemsetAsync per rank: %.1f us\n",
              n, direct * 1e6, replayed * 1e6, launches * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::size_t maxBytes = argc > 2 ? std::strtoull(argv[2], nullptr, 0) : std::size_t{256} << 20;
  const int iterations = argc > 3 ? std::atoi(argv[3]) : 20;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing to measure\n");
    return 0;
  }
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(n));
  std::vector<int> list(static_cast<std::size_t>(n), 0);
  check(ncclCommInitAll(comms.data(), n, list.data()), "ncclCommInitAll");
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(n));
  std::vector<void*> send(static_cast<std::size_t>(n)), recv(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    check(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaMalloc(&send[r], maxBytes), "cudaMalloc");
    check(cudaMalloc(&recv[r], maxBytes), "cudaMalloc");
    check(cudaMemset(send[r], 1, maxBytes), "cudaMemset");
  }
  const double copy = copyBandwidth(send[0], recv[0], maxBytes);
  cudaDeviceProp properties{};
  cudaGetDeviceProperties(&properties, 0);
  std::printf("# %s, %d rank(s) on one GPU; copy bandwidth %.1f GB/s (read + write, %zu B)\n", properties.name, n,
              copy / 1e9, maxBytes);
  std::printf("# %-14s %12s %12s %10s %10s %10s %12s\n", "collective", "size(B)", "count", "time(us)", "algbw",
              "busbw", "limit busbw");
  for (Kind kind : {Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter, Kind::Broadcast}) {
    const Model model = modelOf(kind, n);
    for (std::size_t bytes = 8; bytes <= maxBytes; bytes *= 8) {
      // float elements; size is nccl-tests' size (the larger buffer).
      const std::size_t perRank = kind == Kind::AllGather || kind == Kind::ReduceScatter ? bytes / n : bytes;
      const std::size_t count = perRank / sizeof(float);
      if (count == 0) continue;
      auto callAll = [&] {
        check(ncclGroupStart(), "ncclGroupStart");
        for (int r = 0; r < n; ++r) {
          switch (kind) {
            case Kind::AllReduce:
              check(ncclAllReduce(send[r], recv[r], count, ncclFloat32, ncclSum, comms[r], streams[r]), "ncclAllReduce");
              break;
            case Kind::AllGather:
              check(ncclAllGather(send[r], recv[r], count, ncclFloat32, comms[r], streams[r]), "ncclAllGather");
              break;
            case Kind::ReduceScatter:
              check(ncclReduceScatter(send[r], recv[r], count, ncclFloat32, ncclSum, comms[r], streams[r]),
                    "ncclReduceScatter");
              break;
            case Kind::Broadcast:
              check(ncclBroadcast(send[r], recv[r], count, ncclFloat32, 0, comms[r], streams[r]), "ncclBroadcast");
              break;
          }
        }
        check(ncclGroupEnd(), "ncclGroupEnd");
      };
      for (int i = 0; i < 3; ++i) callAll();
      check(cudaDeviceSynchronize(), "warm-up");
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) callAll();
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
      const double size = static_cast<double>(count * sizeof(float) * (perRank == bytes ? 1 : n));
      const double algbw = size / seconds / 1e9;
      const double limit = copy * model.busFactor / (n * model.trafficFactor) / 1e9;
      std::printf("  %-14s %12.0f %12zu %10.1f %10.2f %10.2f %12.1f\n", model.name, size, count, seconds * 1e6, algbw,
                  algbw * model.busFactor, n > 1 ? limit : 0.0);
    }
  }
  smallCallCosts(comms, streams, send, recv);
  for (int r = 0; r < n; ++r) {
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comms[r], &async);
    if (async != ncclSuccess) {
      std::fprintf(stderr, "rank %d: %s\n", r, ncclGetLastError(comms[r]));
      return 1;
    }
    ncclCommDestroy(comms[r]);
    cudaFree(send[r]);
    cudaFree(recv[r]);
    cudaStreamDestroy(streams[r]);
  }
  return 0;
}
