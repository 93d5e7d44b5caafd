// Collectives on device buffers through nccl.h, with several ranks as threads
// on one GPU (ncclCommInitAll with a device list that repeats the device):
// every ring collective, element type and reduction against references
// computed here on the host, in and out of place, unaligned, counts 0, 1,
// primes and several MiB; then stream order, two communicators at once,
// CUDA graph capture, ncclMemAlloc memory in windows, abort of a kernel that waits for a peer, a peer that
// never comes reported by ncclCommGetAsyncError, and bad input.
//
// Inputs are small integers (0..3, or 1..2 for products), which every
// element type holds exactly and whose sums and products do not depend on
// the order of the reduction, so the references are exact and the
// comparison is bitwise; integer products wrap as the types do.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cuda_ok.h"
#include "device_ranks.h"
#include "log_watch.h"
#include "kernels/dtypes.h"
#include "nccl.h"

namespace {

const ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,    ncclUint32,
                                 ncclInt64,   ncclUint64,  ncclFloat16,  ncclFloat32,
                                 ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
const ncclRedOp_t kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};

std::size_t sizeOf(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}
bool isFloating(ncclDataType_t type) {
  return type == ncclFloat16 || type == ncclFloat32 || type == ncclFloat64 || type == ncclBfloat16 ||
         type == ncclFloat8e4m3 || type == ncclFloat8e5m2;
}

// `value` (an integer, or for a floating Avg a multiple of 1/8) in the
// element type; integers wrap as the type does.
void encode(ncclDataType_t type, double value, unsigned char* out) {
  auto put = [&](auto v) { std::memcpy(out, &v, sizeof(v)); };
  const auto whole = static_cast<std::int64_t>(value);
  switch (type) {
    case ncclInt8: put(static_cast<std::int8_t>(whole)); break;
    case ncclUint8: put(static_cast<std::uint8_t>(whole)); break;
    case ncclInt32: put(static_cast<std::int32_t>(whole)); break;
    case ncclUint32: put(static_cast<std::uint32_t>(whole)); break;
    case ncclInt64: put(static_cast<std::int64_t>(whole)); break;
    case ncclUint64: put(static_cast<std::uint64_t>(whole)); break;
    case ncclFloat16: put(hora::float16(static_cast<float>(value))); break;
    case ncclFloat32: put(static_cast<float>(value)); break;
    case ncclFloat64: put(value); break;
    case ncclBfloat16: put(hora::bfloat16(static_cast<float>(value))); break;
    case ncclFloat8e4m3: put(hora::fp8_e4m3(static_cast<float>(value))); break;
    case ncclFloat8e5m2: put(hora::fp8_e5m2(static_cast<float>(value))); break;
    default: break;
  }
}

// Rank r's input element j for reduction `op`.
double inputValue(ncclRedOp_t op, int rank, std::size_t j) {
  const auto mix = static_cast<int>((j * 7 + static_cast<std::size_t>(rank) * 3 + j / 5) % 4);
  if (op == ncclProd) return 1 + mix % 2;
  if (op == ncclSum || op == ncclAvg) return mix % 2;
  return mix;
}

// Rank r's input element j of a case of kind `kind`: for the copying
// collectives, which move bytes, a value that differs between ranks (so
// that a block from the wrong rank shows); for the others, inputValue.
bool copies(int kind);
double caseInput(int kind, ncclRedOp_t op, int rank, std::size_t j) {
  if (copies(kind)) return static_cast<double>((rank * 5 + j * 3) % 17);
  return inputValue(op, rank, j);
}

double combine(ncclRedOp_t op, double a, double b) {
  switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return a > b ? a : b;
    case ncclMin: return a < b ? a : b;
    default: return a + b;
  }
}

// The reduction over every rank of element j, as the type holds it.
double reduced(ncclRedOp_t op, ncclDataType_t type, int nranks, std::size_t j) {
  double value = inputValue(op, 0, j);
  for (int r = 1; r < nranks; ++r) value = combine(op, value, inputValue(op, r, j));
  if (op == ncclAvg) {
    if (isFloating(type)) return value / nranks;  // exact: nranks is a power of two here
    return static_cast<double>(static_cast<std::int64_t>(value) / nranks);
  }
  return value;
}

enum class Kind { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce };
bool copies(int kind) {
  return kind == static_cast<int>(Kind::AllGather) || kind == static_cast<int>(Kind::Broadcast);
}
const char* kindName(Kind kind) {
  const char* names[] = {"all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce"};
  return names[static_cast<int>(kind)];
}

struct Case {
  Kind kind;
  ncclDataType_t type;
  ncclRedOp_t op;
  std::size_t count;  // per rank: the count argument of the call
  bool inPlace;
  std::size_t shift;  // elements by which both buffers start past an allocation's start
  int root;
};

std::string describe(const Case& c, int nranks) {
  return std::string(kindName(c.kind)) + " nranks=" + std::to_string(nranks) + " type=" + std::to_string(c.type) +
         " op=" + std::to_string(c.op) + " count=" + std::to_string(c.count) + (c.inPlace ? " in-place" : "") +
         " shift=" + std::to_string(c.shift) + " root=" + std::to_string(c.root);
}

// One case's buffers on every rank: inputs uploaded, outputs poisoned.
class CaseBuffers {
 public:
  static constexpr unsigned char kPoison = 0xA5;

  CaseBuffers(int nranks, const Case& c) : c_(c), n_(nranks), sendBase_(n_), recvBase_(n_), send_(n_), recv_(n_) {
    const std::size_t elem = sizeOf(c.type);
    const bool scattered = c.kind == Kind::ReduceScatter, gathered = c.kind == Kind::AllGather;
    sendCount_ = scattered ? c.count * n_ : c.count;
    recvCount_ = gathered ? c.count * n_ : c.count;
    const std::size_t span = (std::max(sendCount_, recvCount_) + c.shift) * elem;
    for (int r = 0; r < n_; ++r) {
      ready_ = ready_ && cudaMalloc(&sendBase_[r], span + 1) == cudaSuccess;
      ready_ = ready_ && cudaMalloc(&recvBase_[r], span + 1) == cudaSuccess;
      ready_ = ready_ && cudaMemset(recvBase_[r], kPoison, span + 1) == cudaSuccess;
      if (!ready_) return;
      auto* base = static_cast<unsigned char*>(c.inPlace ? recvBase_[r] : sendBase_[r]) + c.shift * elem;
      recv_[r] = static_cast<unsigned char*>(recvBase_[r]) + c.shift * elem;
      // In place, NCCL's layouts: all-gather's input is the rank's block of
      // the output, reduce-scatter's output the rank's block of the input.
      send_[r] = c.inPlace && gathered ? static_cast<unsigned char*>(recv_[r]) + r * c.count * elem : base;
      if (c.inPlace && scattered) recv_[r] = base + r * c.count * elem;
      std::vector<unsigned char> input(sendCount_ * elem);
      for (std::size_t j = 0; j < sendCount_; ++j) encode(c.type, caseInput(static_cast<int>(c.kind), c.op, r, j), &input[j * elem]);
      ready_ = ready_ &&
               cudaMemcpy(const_cast<void*>(send_[r]), input.data(), input.size(), cudaMemcpyHostToDevice) == cudaSuccess;
    }
  }
  ~CaseBuffers() {
    for (int r = 0; r < n_; ++r) cudaFree(sendBase_[r]), cudaFree(recvBase_[r]);
  }
  CaseBuffers(const CaseBuffers&) = delete;
  CaseBuffers& operator=(const CaseBuffers&) = delete;

  // Every allocation and upload succeeded.
  bool ready() const { return ready_; }

  // Rank r's call on `stream`: empty, or what it refused.
  std::string call(const Ranks& ranks, int r, cudaStream_t stream) const {
    ncclComm_t comm = ranks.comm(r);
    ncclResult_t result = ncclSuccess;
    switch (c_.kind) {
      case Kind::AllReduce: result = ncclAllReduce(send_[r], recv_[r], c_.count, c_.type, c_.op, comm, stream); break;
      case Kind::ReduceScatter:
        result = ncclReduceScatter(send_[r], recv_[r], c_.count, c_.type, c_.op, comm, stream);
        break;
      case Kind::AllGather: result = ncclAllGather(send_[r], recv_[r], c_.count, c_.type, comm, stream); break;
      case Kind::Broadcast:
        result = ncclBroadcast(send_[r], recv_[r], c_.count, c_.type, c_.root, comm, stream);
        break;
      case Kind::Reduce: result = ncclReduce(send_[r], recv_[r], c_.count, c_.type, c_.op, c_.root, comm, stream); break;
    }
    return result == ncclSuccess ? std::string() : "rank " + std::to_string(r) + ": " + ncclGetLastError(comm);
  }

  // Compares every rank's output with the reference, byte for byte (after
  // the streams are synchronised).
  void verify() const {
    const std::size_t elem = sizeOf(c_.type);
    for (int r = 0; r < n_; ++r) {
      if (c_.kind == Kind::Reduce && r != c_.root) continue;
      std::vector<unsigned char> got(recvCount_ * elem), want(recvCount_ * elem);
      ASSERT_EQ(cudaMemcpy(got.data(), recv_[r], got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      for (std::size_t j = 0; j < recvCount_; ++j) {
        double value = 0;
        switch (c_.kind) {
          case Kind::AllReduce: case Kind::Reduce: value = reduced(c_.op, c_.type, n_, j); break;
          case Kind::ReduceScatter: value = reduced(c_.op, c_.type, n_, r * c_.count + j); break;
          case Kind::AllGather:
            value = caseInput(static_cast<int>(c_.kind), c_.op, static_cast<int>(j / c_.count), j % c_.count);
            break;
          case Kind::Broadcast: value = caseInput(static_cast<int>(c_.kind), c_.op, c_.root, j); break;
        }
        encode(c_.type, value, &want[j * elem]);
      }
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0) << describe(c_, n_) << " rank " << r;
      if (!c_.inPlace) {  // nothing written past the output
        unsigned char after = 0;
        ASSERT_EQ(cudaMemcpy(&after, static_cast<unsigned char*>(recv_[r]) + got.size(), 1, cudaMemcpyDeviceToHost),
                  cudaSuccess);
        ASSERT_EQ(after, kPoison) << describe(c_, n_) << " rank " << r << ": wrote past the output";
      }
    }
  }

 private:
  Case c_;
  int n_;
  bool ready_ = true;
  std::size_t sendCount_ = 0, recvCount_ = 0;
  std::vector<void*> sendBase_, recvBase_;
  std::vector<const void*> send_;
  std::vector<void*> recv_;
};

// Runs `cases` on every rank in one group (one thread: rank after rank,
// each rank's calls in the order given) and compares every rank's output
// of each with the reference, byte for byte. With `rank0Other`, rank 0
// makes every other call on that stream instead of its own.
void runGroup(Ranks& ranks, const std::vector<Case>& cases, cudaStream_t rank0Other = nullptr) {
  const int n = ranks.size();
  std::vector<std::unique_ptr<CaseBuffers>> buffers;
  for (const Case& c : cases) {
    buffers.push_back(std::make_unique<CaseBuffers>(n, c));
    ASSERT_TRUE(buffers.back()->ready()) << describe(c, n) << ": allocating or uploading the buffers failed";
  }
  UPLOADS_LANDED();
  // Every call is made and the group always ended, even after a call that
  // failed: a group left open would swallow every later test's calls.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  std::string refused, where;
  for (int r = 0; r < n && refused.empty(); ++r)
    for (std::size_t i = 0; i < cases.size() && refused.empty(); ++i) {
      const bool other = r == 0 && rank0Other != nullptr && i % 2 == 1;
      refused = buffers[i]->call(ranks, r, other ? rank0Other : ranks.stream(r));
      where = describe(cases[i], n);
    }
  const ncclResult_t ended = ncclGroupEnd();
  ASSERT_EQ(refused, "") << where;
  ASSERT_EQ(ended, ncclSuccess) << where << ": " << ncclGetLastError(nullptr);
  for (int r = 0; r < n; ++r) ASSERT_EQ(cudaStreamSynchronize(ranks.stream(r)), cudaSuccess);
  if (rank0Other != nullptr) ASSERT_EQ(cudaStreamSynchronize(rank0Other), cudaSuccess);
  for (int r = 0; r < n; ++r) {
    ncclResult_t async = ncclInternalError;
    ASSERT_EQ(ncclCommGetAsyncError(ranks.comm(r), &async), ncclSuccess);
    ASSERT_EQ(async, ncclSuccess) << where << ": " << ncclGetLastError(ranks.comm(r));
  }
  for (const auto& b : buffers) {
    b->verify();
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Runs `c` on every rank (one group, one thread) and compares every rank's
// output with the reference, byte for byte.
void runCase(Ranks& ranks, const Case& c) { runGroup(ranks, {c}); }

// Every kind, type and op on 1, 2, 3, 4 and 8 ranks at odd counts.
TEST(DeviceCollectives, EveryKindTypeAndReductionMatchesTheReference) {
  for (int n : {1, 2, 3, 4, 8}) {
    Ranks ranks(n);
    for (ncclDataType_t type : kTypes)
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1031}, std::size_t{65537}}) {
        for (ncclRedOp_t op : kOps) {
          if (op == ncclAvg && isFloating(type) && (n & (n - 1)) != 0) continue;  // 1/3 is inexact
          for (Kind kind : {Kind::AllReduce, Kind::ReduceScatter, Kind::Reduce})
            runCase(ranks, {kind, type, op, count, false, 0, n - 1});
        }
        for (Kind kind : {Kind::AllGather, Kind::Broadcast}) runCase(ranks, {kind, type, ncclSum, count, false, 0, n / 2});
        if (HasFatalFailure()) return;
      }
  }
}

// A group of many collectives per rank. Ring kernels run up to 8 per launch
// where they share a kernel and a stream (one element type and reduction):
// here runs of all-reduces longer than that, each with its own count,
// protocol, channels and place; kinds, types and reductions that change in
// the middle; a float sum's reduce-scatter, reduce and all-reduce in one
// launch; all-gathers and a broadcast of different types in another (they
// move bytes); counts of 0 that launch nothing. Three rounds, so that each
// launch picks the FIFOs up where the one before left them; in the third,
// rank 0 alternates two streams, so that it cuts the group into a launch
// per collective while the others fuse them (the launch rule numbers
// collectives, not launches). One thread launches every rank's kernels,
// several per rank, in the order of their collectives, each waiting its
// turn (device/launch_order.h, nextLaunchOf). The suite runs it again with
// one hardware queue for every stream (CUDA_DEVICE_MAX_CONNECTIONS=1,
// `gpu device_collectives_one_queue`), where a rank's second launch made
// before a peer's first would stand in front of it and never start.
TEST(DeviceCollectives, AGroupOfManyCollectivesMatchesTheReference) {
  for (int n : {2, 3, 4}) {
    Ranks ranks(n);
    std::vector<Case> cases;
    const std::size_t counts[] = {1, 7, 0, 4099, 300007, 64, 1031, 2, 65537, 3};
    for (std::size_t i = 0; i < std::size(counts); ++i)
      cases.push_back({Kind::AllReduce, ncclFloat32, ncclSum, counts[i], i % 2 == 1, i % 3, 0});
    cases.push_back({Kind::AllReduce, ncclInt32, ncclMax, 1031, false, 0, 0});
    cases.push_back({Kind::AllReduce, ncclInt32, ncclMax, 5, true, 1, 0});
    cases.push_back({Kind::AllGather, ncclFloat16, ncclSum, 1031, false, 0, 0});
    cases.push_back({Kind::Broadcast, ncclInt64, ncclSum, 4099, true, 0, n - 1});
    cases.push_back({Kind::AllGather, ncclUint8, ncclSum, 70001, true, 1, 0});
    cases.push_back({Kind::ReduceScatter, ncclFloat32, ncclSum, 1031, false, 0, 0});
    cases.push_back({Kind::Reduce, ncclFloat32, ncclSum, 4099, false, 0, 1});
    cases.push_back({Kind::AllReduce, ncclFloat32, ncclSum, 17, false, 0, 0});
    cudaStream_t other = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
    for (int round = 0; round < 3; ++round) {
      runGroup(ranks, cases, round == 2 ? other : nullptr);
      if (HasFatalFailure()) break;
    }
    cudaStreamDestroy(other);
    if (HasFatalFailure()) return;
  }
}

// Pre-multiplied sums in one group: by-value scalars share a launch only
// with their own value, and scalars in device memory (ncclScalarDevice)
// share any, each read by its own collective. Five all-reduces, three
// launches: {2, *3, *5, 2}, {7}.
TEST(DeviceCollectives, PreMulSumsInAGroupUseEachTheirScalar) {
  const int n = 2;
  Ranks ranks(n);
  const std::size_t count = 4099;
  const float scalars[] = {2.0f, 3.0f, 5.0f, 2.0f, 7.0f};
  const bool inMemory[] = {false, true, true, false, false};
  constexpr int kOps = 5;
  float* onDevice = nullptr;
  CUDA_OK(cudaMalloc(&onDevice, sizeof(scalars)));
  CUDA_OK(cudaMemcpy(onDevice, scalars, sizeof(scalars), cudaMemcpyHostToDevice));
  std::vector<std::vector<float*>> buffers(n, std::vector<float*>(kOps));
  std::vector<std::vector<ncclRedOp_t>> ops(n, std::vector<ncclRedOp_t>(kOps));
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < kOps; ++k) {
      CUDA_OK(cudaMalloc(&buffers[r][k], count * sizeof(float)));
      const std::vector<float> input(count, static_cast<float>(r + 1));
      CUDA_OK(cudaMemcpy(buffers[r][k], input.data(), count * sizeof(float), cudaMemcpyHostToDevice));
      if (inMemory[k]) {
        NCCL_OK(ncclRedOpCreatePreMulSum(&ops[r][k], onDevice + k, ncclFloat32, ncclScalarDevice, ranks.comm(r)));
      } else {
        NCCL_OK(ncclRedOpCreatePreMulSum(&ops[r][k], const_cast<float*>(&scalars[k]), ncclFloat32,
                                         ncclScalarHostImmediate, ranks.comm(r)));
      }
    }
  UPLOADS_LANDED();
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < kOps; ++k)
      NCCL_OK(ncclAllReduce(buffers[r][k], buffers[r][k], count, ncclFloat32, ops[r][k], ranks.comm(r),
                            ranks.stream(r)));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) {
    CUDA_OK(cudaStreamSynchronize(ranks.stream(r)));
    for (int k = 0; k < kOps; ++k) {
      std::vector<float> got(count);
      CUDA_OK(cudaMemcpy(got.data(), buffers[r][k], count * sizeof(float), cudaMemcpyDeviceToHost));
      const float want = scalars[k] * static_cast<float>(n * (n + 1) / 2);
      EXPECT_EQ(std::count(got.begin(), got.end(), want), static_cast<std::ptrdiff_t>(count))
          << "rank " << r << ", all-reduce " << k << ": got " << got[0] << ", want " << want;
      NCCL_OK(ncclRedOpDestroy(ops[r][k], ranks.comm(r)));
      cudaFree(buffers[r][k]);
    }
  }
  cudaFree(onDevice);
}

// With NCCL_P2P_DISABLE=1 and an INFO log in HORA_DEBUG_FILE (the gpu
// suite's *_host_fifos runs, which run other tests of this program the same
// way), every rank's receive FIFOs are in pinned host memory, as each rank's
// executor says in the log, and a collective through them is exact.
TEST(DeviceCollectives, P2pDisabledPutsEveryRanksFifosInHostMemory) {
  if (!p2pDisabledAndLogged()) GTEST_SKIP() << "runs with NCCL_P2P_DISABLE=1, HORA_DEBUG=INFO and HORA_DEBUG_FILE set";
  const LogWatch log;
  {
    Ranks ranks(3);
    runCase(ranks, {Kind::AllReduce, ncclInt32, ncclSum, 65537, false, 0, 0});
    runCase(ranks, {Kind::AllReduce, ncclFloat32, ncclSum, (3u << 20) + 5, true, 3, 0});
    runCase(ranks, {Kind::AllGather, ncclFloat16, ncclSum, 1031, true, 1, 0});
  }
  EXPECT_EQ(log.linesWith(kFifosInHostMemoryLine), 3);
}

// In place in NCCL's layouts, buffers that start off a 16-byte boundary, and
// sizes large enough for many channels and loops.
TEST(DeviceCollectives, InPlaceUnalignedAndLarge) {
  for (int n : {1, 2, 3, 4}) {
    Ranks ranks(n);
    for (Kind kind : {Kind::AllReduce, Kind::ReduceScatter, Kind::AllGather, Kind::Broadcast, Kind::Reduce})
      for (bool inPlace : {false, true})
        for (std::size_t shift : {std::size_t{0}, std::size_t{1}, std::size_t{3}})
          for (std::size_t count : {std::size_t{4099}, std::size_t{(3u << 20) + 5}}) {
            runCase(ranks, {kind, ncclFloat32, ncclSum, count, inPlace, shift, 1 % n});
            runCase(ranks, {kind, ncclInt8, ncclMax, count, inPlace, shift, 0});
            if (HasFatalFailure()) return;
          }
  }
}

// ncclRedOpCreatePreMulSum: every input is multiplied by the scalar before
// the sum, in and out of place; with one rank too, where the other
// reductions are a plain copy but this one is not.
TEST(DeviceCollectives, PreMulSumScalesEveryInput) {
  const std::size_t count = 4099;
  for (int n : {1, 2, 3}) {
    Ranks ranks(n);
    for (bool inPlace : {false, true}) {
      std::vector<float*> in(n), out(n);
      std::vector<ncclRedOp_t> ops(n);
      const float scalar = 2.0f;
      for (int r = 0; r < n; ++r) {
        CUDA_OK(cudaMalloc(&in[r], count * sizeof(float)));
        out[r] = in[r];
        if (!inPlace) CUDA_OK(cudaMalloc(&out[r], count * sizeof(float)));
        std::vector<float> input(count, static_cast<float>(r + 1));
        CUDA_OK(cudaMemcpy(in[r], input.data(), count * sizeof(float), cudaMemcpyHostToDevice));
        NCCL_OK(ncclRedOpCreatePreMulSum(&ops[r], const_cast<float*>(&scalar), ncclFloat32, ncclScalarHostImmediate,
                                         ranks.comm(r)));
      }
      UPLOADS_LANDED();
      NCCL_OK(ncclGroupStart());
      for (int r = 0; r < n; ++r)
        NCCL_OK(ncclAllReduce(in[r], out[r], count, ncclFloat32, ops[r], ranks.comm(r), ranks.stream(r)));
      NCCL_OK(ncclGroupEnd());
      const float want = static_cast<float>(n * (n + 1));  // 2 x (1 + ... + n)
      for (int r = 0; r < n; ++r) {
        CUDA_OK(cudaStreamSynchronize(ranks.stream(r)));
        std::vector<float> got(count);
        CUDA_OK(cudaMemcpy(got.data(), out[r], count * sizeof(float), cudaMemcpyDeviceToHost));
        EXPECT_EQ(std::count(got.begin(), got.end(), want), static_cast<std::ptrdiff_t>(count))
            << n << " ranks, rank " << r << (inPlace ? " in place" : "") << ": got " << got[0];
        NCCL_OK(ncclRedOpDestroy(ops[r], ranks.comm(r)));
        if (!inPlace) cudaFree(out[r]);
        cudaFree(in[r]);
      }
    }
  }
}

__global__ void fill(float* data, std::size_t count, float value) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) data[i] = value;
}

// A collective enqueued after the program's own kernel on the same stream
// sees what that kernel wrote; two communicators on two streams each run.
TEST(DeviceCollectives, StreamOrderAndTwoCommunicators) {
  const int n = 3;
  Ranks first(n), second(n);
  const std::size_t count = 1 << 20;
  std::vector<float*> a(n), b(n);
  for (int r = 0; r < n; ++r) {
    CUDA_OK(cudaMalloc(&a[r], count * sizeof(float)));
    CUDA_OK(cudaMalloc(&b[r], count * sizeof(float)));
  }
  for (int round = 0; round < 5; ++round) {
    NCCL_OK(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      fill<<<64, 256, 0, first.stream(r)>>>(a[r], count, static_cast<float>(r + round));
      fill<<<64, 256, 0, second.stream(r)>>>(b[r], count, static_cast<float>(2 * r));
      NCCL_OK(ncclAllReduce(a[r], a[r], count, ncclFloat32, ncclSum, first.comm(r), first.stream(r)));
      NCCL_OK(ncclAllReduce(b[r], b[r], count, ncclFloat32, ncclMax, second.comm(r), second.stream(r)));
    }
    NCCL_OK(ncclGroupEnd());
    for (int r = 0; r < n; ++r) {
      CUDA_OK(cudaStreamSynchronize(first.stream(r)));
      CUDA_OK(cudaStreamSynchronize(second.stream(r)));
      std::vector<float> gotA(count), gotB(count);
      CUDA_OK(cudaMemcpy(gotA.data(), a[r], count * sizeof(float), cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(gotB.data(), b[r], count * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < count; i += 4099) {
        ASSERT_EQ(gotA[i], static_cast<float>(0 + 1 + 2 + 3 * round)) << "round " << round << " rank " << r;
        ASSERT_EQ(gotB[i], 4.0f) << "round " << round << " rank " << r;
      }
    }
  }
  for (int r = 0; r < n; ++r) cudaFree(a[r]), cudaFree(b[r]);
}

// A rank's thread records its first failure here (a gtest assertion on
// another thread could not stop it); checks after the first only say to
// stop.
class RankCheck {
 public:
  bool operator()(bool ok, const std::string& what) {
    if (!ok && error_.empty()) error_ = what;
    return ok;
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

// Runs body(r, check) on a thread per rank with device 0 current, then
// reports each rank's first failure.
template <typename Body>
void onRankThreads(int n, Body body) {
  std::vector<RankCheck> checks(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      cudaSetDevice(0);
      body(r, checks[static_cast<std::size_t>(r)]);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    const RankCheck& check = checks[static_cast<std::size_t>(r)];
    EXPECT_TRUE(check.ok()) << "rank " << r << ": " << check.error();
  }
}

// Ranks as threads on one GPU, each driven by its own thread, alternate a
// send/receive exchange (the send first: it is the point-to-point
// kernel's block 0, and ends before the receive beside it) with an
// all-reduce. A rank launches its all-reduce only once its whole
// point-to-point kernel has ended (the launch rule); launched once the
// send alone had ended, it could stand in a shared hardware queue in
// front of the peer's point-to-point kernel, which its receive waits for.
// With one queue (device_collectives_one_queue) such a launch would never
// start.
TEST(DeviceCollectives, SendsAndReceivesThenACollectiveOnRankThreadsEnd) {
  const int n = 2;
  const int rounds = 200;
  Ranks ranks(n);
  const std::size_t count = 1 << 12;
  std::vector<float*> send(n), recv(n), sum(n);
  for (int r = 0; r < n; ++r) {
    CUDA_OK(cudaMalloc(&send[r], count * sizeof(float)));
    CUDA_OK(cudaMalloc(&recv[r], count * sizeof(float)));
    CUDA_OK(cudaMalloc(&sum[r], count * sizeof(float)));
  }
  onRankThreads(n, [&](int r, RankCheck& check) {
    const int peer = 1 - r;
    ncclComm_t comm = ranks.comm(r);
    cudaStream_t stream = ranks.stream(r);
    for (int round = 0; round < rounds && check.ok(); ++round) {
      fill<<<16, 256, 0, stream>>>(send[r], count, static_cast<float>(r + round));
      check(ncclGroupStart() == ncclSuccess, "group start");
      check(ncclSend(send[r], count, ncclFloat32, peer, comm, stream) == ncclSuccess, "send");
      check(ncclRecv(recv[r], count, ncclFloat32, peer, comm, stream) == ncclSuccess, "receive");
      check(ncclGroupEnd() == ncclSuccess, std::string("send/receive: ") + ncclGetLastError(comm));
      check(ncclAllReduce(send[r], sum[r], count, ncclFloat32, ncclSum, comm, stream) == ncclSuccess,
            std::string("all-reduce: ") + ncclGetLastError(comm));
    }
    check(cudaStreamSynchronize(stream) == cudaSuccess, "synchronize");
    std::vector<float> got(count), total(count);
    check(cudaMemcpy(got.data(), recv[r], count * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess, "copy");
    check(cudaMemcpy(total.data(), sum[r], count * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess, "copy");
    const auto last = static_cast<float>(rounds - 1);
    for (std::size_t i = 0; i < count; i += 511) {
      check(got[i] == static_cast<float>(peer) + last, "received " + std::to_string(got[i]));
      check(total[i] == 1.0f + 2 * last, "all-reduced " + std::to_string(total[i]));
    }
  });
  for (int r = 0; r < n; ++r) cudaFree(send[r]), cudaFree(recv[r]), cudaFree(sum[r]);
}

// A launch is checked by its own result: an error the program left pending
// (a failed allocation, which leaves the context usable) is neither taken
// for a failed launch of hora's nor cleared by it.
TEST(DeviceCollectives, AnErrorTheProgramLeftPendingIsNeitherHorasNorCleared) {
  const int n = 2;
  Ranks ranks(n);
  const std::size_t count = 1024;
  std::vector<float*> data(n);
  for (int r = 0; r < n; ++r) CUDA_OK(cudaMalloc(&data[r], count * sizeof(float)));
  void* tooLarge = nullptr;
  ASSERT_EQ(cudaMalloc(&tooLarge, std::size_t{1} << 60), cudaErrorMemoryAllocation);
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r)
    NCCL_OK(ncclAllReduce(data[r], data[r], count, ncclFloat32, ncclSum, ranks.comm(r), ranks.stream(r)));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) CUDA_OK(cudaStreamSynchronize(ranks.stream(r)));
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  for (int r = 0; r < n; ++r) {
    ncclResult_t async = ncclSuccess;
    NCCL_OK(ncclCommGetAsyncError(ranks.comm(r), &async));
    EXPECT_EQ(async, ncclSuccess);
    cudaFree(data[r]);
  }
}

// Captures one all-reduce on `stream` into a graph, ready to launch.
cudaGraphExec_t captureAllReduce(const float* in, float* out, std::size_t count, ncclRedOp_t op, ncclComm_t comm,
                                 cudaStream_t stream, RankCheck& check) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess, "begin capture");
  check(ncclAllReduce(in, out, count, ncclFloat32, op, comm, stream) == ncclSuccess,
        std::string("capture: ") + ncclGetLastError(comm));
  check(cudaStreamEndCapture(stream, &graph) == cudaSuccess, "end capture");
  check(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "instantiate");
  cudaGraphDestroy(graph);  // the executable graph stands alone
  return exec;
}

// Each rank's thread captures its all-reduce into a CUDA graph and replays
// it 100 times, with new inputs between some replays.
TEST(DeviceCollectives, GraphCaptureReplays) {
  const int n = 4;
  Ranks ranks(n);
  const std::size_t count = 100003;
  onRankThreads(n, [&](int r, RankCheck& check) {
    float *in = nullptr, *out = nullptr;
    cudaMalloc(&in, count * sizeof(float));
    cudaMalloc(&out, count * sizeof(float));
    cudaStream_t stream = ranks.stream(r);
    cudaGraphExec_t exec = captureAllReduce(in, out, count, ncclSum, ranks.comm(r), stream, check);
    std::vector<float> input(count), got(count);
    for (int replay = 0; replay < 100 && check.ok(); ++replay) {
      // Replay k of every rank pairs with replay k of the others.
      std::fill(input.begin(), input.end(), static_cast<float>(r + replay % 7));
      cudaMemcpyAsync(in, input.data(), count * sizeof(float), cudaMemcpyHostToDevice, stream);
      check(cudaGraphLaunch(exec, stream) == cudaSuccess, "launch");
      check(cudaStreamSynchronize(stream) == cudaSuccess, "replay " + std::to_string(replay));
      cudaMemcpy(got.data(), out, count * sizeof(float), cudaMemcpyDeviceToHost);
      const float want = static_cast<float>(n * (n - 1) / 2 + n * (replay % 7));
      check(got[0] == want && got[count / 2] == want && got[count - 1] == want,
            "replay " + std::to_string(replay) + ": got " + std::to_string(got[0]) + ", want " +
                std::to_string(want));
    }
    cudaGraphExecDestroy(exec);
    cudaFree(in);
    cudaFree(out);
  });
}

// Each rank's thread captures a group of five all-reduces (three launches:
// a max cuts the run of sums in two) and replays the graph 20 times with
// new inputs.
TEST(DeviceCollectives, GraphCaptureOfAGroupReplays) {
  const int n = 3;
  Ranks ranks(n);
  const std::size_t counts[] = {3, 1031, 100003, 8, 65537};
  const ncclRedOp_t ops[] = {ncclSum, ncclSum, ncclSum, ncclMax, ncclSum};
  constexpr int kOps = 5;
  onRankThreads(n, [&](int r, RankCheck& check) {
    float* buffers[kOps] = {};
    for (int k = 0; k < kOps; ++k) cudaMalloc(&buffers[k], counts[k] * sizeof(float));
    cudaStream_t stream = ranks.stream(r);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess, "begin capture");
    check(ncclGroupStart() == ncclSuccess, "group start");
    for (int k = 0; k < kOps; ++k)
      check(ncclAllReduce(buffers[k], buffers[k], counts[k], ncclFloat32, ops[k], ranks.comm(r), stream) ==
                ncclSuccess,
            std::string("capture: ") + ncclGetLastError(ranks.comm(r)));
    check(ncclGroupEnd() == ncclSuccess, std::string("group end: ") + ncclGetLastError(ranks.comm(r)));
    check(cudaStreamEndCapture(stream, &graph) == cudaSuccess, "end capture");
    check(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "instantiate");
    cudaGraphDestroy(graph);
    for (int replay = 0; replay < 20 && check.ok(); ++replay) {
      for (int k = 0; k < kOps; ++k) {
        const std::vector<float> input(counts[k], static_cast<float>(r + replay % 5 + k));
        cudaMemcpyAsync(buffers[k], input.data(), counts[k] * sizeof(float), cudaMemcpyHostToDevice, stream);
      }
      check(cudaGraphLaunch(exec, stream) == cudaSuccess, "launch");
      check(cudaStreamSynchronize(stream) == cudaSuccess, "replay " + std::to_string(replay));
      for (int k = 0; k < kOps && check.ok(); ++k) {
        std::vector<float> got(counts[k]);
        cudaMemcpy(got.data(), buffers[k], counts[k] * sizeof(float), cudaMemcpyDeviceToHost);
        const float base = static_cast<float>(replay % 5 + k);
        const float want = ops[k] == ncclMax ? static_cast<float>(n - 1) + base
                                             : static_cast<float>(n * (n - 1) / 2) + static_cast<float>(n) * base;
        check(std::count(got.begin(), got.end(), want) == static_cast<std::ptrdiff_t>(counts[k]),
              "replay " + std::to_string(replay) + ", all-reduce " + std::to_string(k) + ": got " +
                  std::to_string(got[0]) + ", want " + std::to_string(want));
      }
    }
    cudaGraphExecDestroy(exec);
    for (float* b : buffers) cudaFree(b);
  });
}

__global__ void storeScalar(float* at, float value) { *at = value; }

// ncclScalarDevice: the kernel reads the scalar as it runs, after what the
// stream did before it, so a kernel on the same (non-blocking) stream may
// write it just before the collective, and every replay of a captured
// collective reads the value of its turn. Each rank's thread alternates
// direct calls and replays of one graph.
TEST(DeviceCollectives, DeviceScalarIsReadByEveryRunOfTheCollective) {
  const int n = 3;
  Ranks ranks(n);
  const std::size_t count = 70001;
  onRankThreads(n, [&](int r, RankCheck& check) {
    cudaStream_t stream = ranks.stream(r);
    float *in = nullptr, *out = nullptr, *scalar = nullptr;
    cudaMalloc(&in, count * sizeof(float));
    cudaMalloc(&out, count * sizeof(float));
    cudaMalloc(&scalar, sizeof(float));
    const std::vector<float> input(count, static_cast<float>(r + 1));
    cudaMemcpy(in, input.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    check(cudaStreamSynchronize(cudaStreamLegacy) == cudaSuccess, "upload");  // (UPLOADS_LANDED says why)
    ncclRedOp_t op{};
    check(ncclRedOpCreatePreMulSum(&op, scalar, ncclFloat32, ncclScalarDevice, ranks.comm(r)) == ncclSuccess,
          std::string("create: ") + ncclGetLastError(ranks.comm(r)));
    cudaGraphExec_t exec = captureAllReduce(in, out, count, op, ranks.comm(r), stream, check);
    std::vector<float> got(count);
    for (int turn = 0; turn < 40 && check.ok(); ++turn) {
      const float value = static_cast<float>(turn % 5 + 1);
      storeScalar<<<1, 1, 0, stream>>>(scalar, value);
      if (turn % 2 == 0) {
        check(ncclAllReduce(in, out, count, ncclFloat32, op, ranks.comm(r), stream) == ncclSuccess,
              std::string("call: ") + ncclGetLastError(ranks.comm(r)));
      } else {
        check(cudaGraphLaunch(exec, stream) == cudaSuccess, "launch");
      }
      check(cudaStreamSynchronize(stream) == cudaSuccess, "turn " + std::to_string(turn));
      cudaMemcpy(got.data(), out, count * sizeof(float), cudaMemcpyDeviceToHost);
      const float want = value * static_cast<float>(n * (n + 1) / 2);
      check(std::count(got.begin(), got.end(), want) == static_cast<std::ptrdiff_t>(count),
            "turn " + std::to_string(turn) + (turn % 2 ? " (replay)" : " (call)") + ": got " +
                std::to_string(got[0]) + ", want " + std::to_string(want));
    }
    cudaGraphExecDestroy(exec);
    ncclRedOpDestroy(op, ranks.comm(r));
    cudaFree(scalar);
    cudaFree(in);
    cudaFree(out);
  });
}

// With a current device ncclMemAlloc returns device memory, as NCCL's; it
// can be registered (ncclCommRegister, and the collective
// ncclCommWindowRegister) and collectives on it are right.
TEST(DeviceCollectives, MemAllocWindowsOnDevice) {
  const int n = 2;
  const std::size_t count = (1 << 20) + 3;
  Ranks ranks(n);
  CUDA_OK(cudaSetDevice(0));
  std::vector<float*> buffers(n);
  for (int r = 0; r < n; ++r) {
    NCCL_OK(ncclMemAlloc(reinterpret_cast<void**>(&buffers[r]), count * sizeof(float)));
    cudaPointerAttributes attributes{};
    CUDA_OK(cudaPointerGetAttributes(&attributes, buffers[r]));
    EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
    std::vector<float> input(count, static_cast<float>(r + 1));
    CUDA_OK(cudaMemcpy(buffers[r], input.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  }
  UPLOADS_LANDED();
  std::vector<ncclWindow_t> windows(n);
  std::vector<void*> handles(n);
  std::vector<std::thread> threads;
  std::vector<ncclResult_t> results(n, ncclInternalError);
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      results[r] = ncclCommWindowRegister(ranks.comm(r), buffers[r], count * sizeof(float), &windows[r],
                                          NCCL_WIN_COLL_SYMMETRIC);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(results[r], ncclSuccess) << ncclGetLastError(ranks.comm(r));
    NCCL_OK(ncclCommRegister(ranks.comm(r), buffers[r], count * sizeof(float), &handles[r]));
  }
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r)
    NCCL_OK(ncclAllReduce(buffers[r], buffers[r], count, ncclFloat32, ncclSum, ranks.comm(r), ranks.stream(r)));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) {
    CUDA_OK(cudaStreamSynchronize(ranks.stream(r)));
    std::vector<float> got(count);
    CUDA_OK(cudaMemcpy(got.data(), buffers[r], count * sizeof(float), cudaMemcpyDeviceToHost));
    EXPECT_EQ(std::count(got.begin(), got.end(), 3.0f), static_cast<std::ptrdiff_t>(count)) << "rank " << r;
    NCCL_OK(ncclCommDeregister(ranks.comm(r), handles[r]));
  }
  threads.clear();
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] { results[r] = ncclCommWindowDeregister(ranks.comm(r), windows[r]); });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(results[r], ncclSuccess) << ncclGetLastError(ranks.comm(r));
    NCCL_OK(ncclMemFree(buffers[r]));
  }
}

// A kernel waiting for a peer that never calls: ncclCommGetAsyncError says
// nothing is wrong while it waits, ncclCommAbort ends it at once.
TEST(DeviceCollectives, AbortEndsAKernelWaitingForAPeer) {
  Ranks ranks(2);
  float* buffer = nullptr;
  CUDA_OK(cudaMalloc(&buffer, 4096 * sizeof(float)));
  NCCL_OK(ncclAllReduce(buffer, buffer, 4096, ncclFloat32, ncclSum, ranks.comm(0), ranks.stream(0)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(cudaStreamQuery(ranks.stream(0)), cudaErrorNotReady);
  ncclResult_t async = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(ranks.comm(0), &async));
  EXPECT_EQ(async, ncclSuccess);
  const auto start = std::chrono::steady_clock::now();
  NCCL_OK(ncclCommAbort(ranks.comm(0)));
  ranks.release(0);
  CUDA_OK(cudaStreamSynchronize(ranks.stream(0)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  cudaFree(buffer);
}

// A rank whose kernel stops says so on its FIFOs, and a neighbour's kernel
// waiting on it stops within moments, naming it, instead of at its own
// deadline (HORA_TIMEOUT, 30 s in the gpu suite). Rank 1's call waits
// behind a host function on its stream, so that rank 0's kernel is stopped
// (revoked) first: rank 1's kernel then starts, sends, and waits for rank
// 0's next piece, which will not come.
TEST(DeviceCollectives, AStoppedRankStopsItsNeighbour) {
  Ranks ranks(2);
  float* buffers[2] = {};
  for (float*& b : buffers) CUDA_OK(cudaMalloc(&b, 4096 * sizeof(float)));
  // Static, and set however the test ends: the host function must not
  // outlive its flag, nor hold stream 1 (and the communicators' frees)
  // for ever.
  static std::atomic<bool> go;
  go = false;
  struct Release {
    ~Release() { go = true; }
  } release;
  CUDA_OK(cudaLaunchHostFunc(
      ranks.stream(1),
      [](void* flag) {
        auto* released = static_cast<std::atomic<bool>*>(flag);
        while (!released->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      &go));
  for (int r = 0; r < 2; ++r)
    NCCL_OK(ncclAllReduce(buffers[r], buffers[r], 4096, ncclFloat32, ncclSum, ranks.comm(r), ranks.stream(r)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(cudaStreamQuery(ranks.stream(0)), cudaErrorNotReady);
  NCCL_OK(ncclCommRevoke(ranks.comm(0), NCCL_REVOKE_DEFAULT));
  CUDA_OK(cudaStreamSynchronize(ranks.stream(0)));
  const auto start = std::chrono::steady_clock::now();
  go = true;
  CUDA_OK(cudaStreamSynchronize(ranks.stream(1)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ncclResult_t async = ncclSuccess;
  NCCL_OK(ncclCommGetAsyncError(ranks.comm(1), &async));
  EXPECT_EQ(async, ncclRemoteError);
  const std::string message = ncclGetLastError(ranks.comm(1));
  EXPECT_NE(message.find("rank 0 stopped first"), std::string::npos) << message;
  ranks.abortAll();
  for (float* b : buffers) cudaFree(b);
}

// A peer that never makes its call: after HORA_TIMEOUT the waiting kernel
// ends and ncclCommGetAsyncError reports a remote error naming that peer;
// the next call fails with it.
TEST(DeviceCollectives, APeerThatNeverComesIsReported) {
  setenv("HORA_TIMEOUT", "2", 1);
  Ranks ranks(3);
  unsetenv("HORA_TIMEOUT");
  float* buffer = nullptr;
  CUDA_OK(cudaMalloc(&buffer, 4096 * sizeof(float)));
  NCCL_OK(ncclAllReduce(buffer, buffer, 4096, ncclFloat32, ncclSum, ranks.comm(0), ranks.stream(0)));
  CUDA_OK(cudaStreamSynchronize(ranks.stream(0)));  // ends at the deadline
  ncclResult_t async = ncclSuccess;
  NCCL_OK(ncclCommGetAsyncError(ranks.comm(0), &async));
  EXPECT_EQ(async, ncclRemoteError);
  const std::string message = ncclGetLastError(ranks.comm(0));
  EXPECT_NE(message.find("HORA_TIMEOUT"), std::string::npos) << message;
  EXPECT_NE(message.find("rank"), std::string::npos) << message;
  EXPECT_NE(ncclAllReduce(buffer, buffer, 4096, ncclFloat32, ncclSum, ranks.comm(0), ranks.stream(0)), ncclSuccess);
  ranks.abortAll();
  cudaFree(buffer);
}

// Two ranks that disagree on the count: each receives a piece of another
// size than its call expects, and each kernel stops with an error naming
// the other rank, in either protocol (a small count goes by LL, a large one
// by Simple); no rank returns success with the wrong data. The large
// counts give the ranks different numbers of channels: the blocks one rank
// has and the other lacks stop too, once a block of theirs has failed,
// well before the deadline.
// Counts on both sides of the LL limit (1000 and 100000 floats) put the two
// ranks on different protocols: each then sees the other's data on the
// FIFO it does not wait on (device/protocol_watch.cuh).
TEST(DeviceCollectives, RanksThatDisagreeOnTheCountAreStopped) {
  for (auto [count, other] : {std::pair<std::size_t, std::size_t>{100, 60}, {1u << 20, (1u << 20) * 3 / 5},
                              {1000, 100000}}) {
    Ranks ranks(2);
    float* buffers[2] = {};
    for (float*& b : buffers) CUDA_OK(cudaMalloc(&b, std::max(count, other) * sizeof(float)));
    const auto start = std::chrono::steady_clock::now();
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclAllReduce(buffers[0], buffers[0], count, ncclFloat32, ncclSum, ranks.comm(0), ranks.stream(0)));
    NCCL_OK(ncclAllReduce(buffers[1], buffers[1], other, ncclFloat32, ncclSum, ranks.comm(1), ranks.stream(1)));
    NCCL_OK(ncclGroupEnd());
    for (int r = 0; r < 2; ++r) CUDA_OK(cudaStreamSynchronize(ranks.stream(r)));
    // (The protocol watch waits 10 ms on end before it stops a kernel.)
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(count == 1000 ? 2 : 10)) << count;
    for (int r = 0; r < 2; ++r) {
      ncclResult_t async = ncclSuccess;
      NCCL_OK(ncclCommGetAsyncError(ranks.comm(r), &async));
      EXPECT_EQ(async, ncclInvalidUsage) << "rank " << r << ", count " << count;
      const std::string message = ncclGetLastError(ranks.comm(r));
      EXPECT_NE(message.find("collective mismatch with rank " + std::to_string(1 - r)), std::string::npos)
          << message;
      if (count == 1000)
        EXPECT_NE(message.find("by a different protocol"), std::string::npos) << message;
      ncclCommAbort(ranks.comm(r));
      ranks.release(r);
    }
    for (float* b : buffers) cudaFree(b);
  }
}

// Three ranks, the third on another protocol than the first two: a rank
// whose peers both call on its protocol (rank 1 receives from rank 0 and
// sends to rank 2, which never takes its LL lines) sees no data on the
// wrong FIFO, yet every rank reports the mismatch (ncclInvalidUsage),
// since the stop that reaches it carries why the first rank stopped, not
// only who it was.
TEST(DeviceCollectives, AMismatchFoundByOneRankIsAMismatchOnEveryRank) {
  const std::size_t counts[3] = {1000, 1000, 100000};
  Ranks ranks(3);
  float* buffers[3] = {};
  for (float*& b : buffers) CUDA_OK(cudaMalloc(&b, counts[2] * sizeof(float)));
  const auto start = std::chrono::steady_clock::now();
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < 3; ++r)
    NCCL_OK(ncclAllReduce(buffers[r], buffers[r], counts[r], ncclFloat32, ncclSum, ranks.comm(r), ranks.stream(r)));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < 3; ++r) CUDA_OK(cudaStreamSynchronize(ranks.stream(r)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  for (int r = 0; r < 3; ++r) {
    ncclResult_t async = ncclSuccess;
    NCCL_OK(ncclCommGetAsyncError(ranks.comm(r), &async));
    EXPECT_EQ(async, ncclInvalidUsage) << "rank " << r;
    const std::string message = ncclGetLastError(ranks.comm(r));
    EXPECT_NE(message.find("collective mismatch with rank"), std::string::npos) << message;
    EXPECT_NE(message.find("by a different protocol"), std::string::npos) << message;
    ncclCommAbort(ranks.comm(r));
    ranks.release(r);
  }
  for (float* b : buffers) cudaFree(b);
}

TEST(DeviceCollectives, BadInputIsRefusedClearly) {
  Ranks ranks(2);
  int device = -1;
  NCCL_OK(ncclCommCuDevice(ranks.comm(1), &device));
  EXPECT_EQ(device, 0);
  float* onDevice = nullptr;
  CUDA_OK(cudaMalloc(&onDevice, 64 * sizeof(float)));
  std::vector<float> onHost(64);
  EXPECT_EQ(ncclAllReduce(onDevice, onHost.data(), 64, ncclFloat32, ncclSum, ranks.comm(0), ranks.stream(0)),
            ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(ranks.comm(0))).find("mixes host and device"), std::string::npos);
  // Ranks of one process sharing the GPU cannot use the legacy default
  // stream: their kernels would be serialised and wait for each other.
  EXPECT_EQ(ncclAllReduce(onDevice, onDevice, 64, ncclFloat32, ncclSum, ranks.comm(0), nullptr), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(ranks.comm(0))).find("legacy default stream"), std::string::npos);
  // A scalar said to be in device memory that a kernel cannot read.
  float hostScalar = 2.0f;
  ncclRedOp_t premul{};
  NCCL_OK(ncclRedOpCreatePreMulSum(&premul, &hostScalar, ncclFloat32, ncclScalarDevice, ranks.comm(0)));
  EXPECT_EQ(ncclAllReduce(onDevice, onDevice, 64, ncclFloat32, premul, ranks.comm(0), ranks.stream(0)),
            ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(ranks.comm(0))).find("cannot read it (pageable host memory"), std::string::npos);
  NCCL_OK(ncclRedOpDestroy(premul, ranks.comm(0)));
  // A buffer a rank does not use (a broadcast's send away from the root)
  // may be anything, as with NCCL: a host pointer there mixes nothing.
  CUDA_OK(cudaMemset(onDevice, 0, 64 * sizeof(float)));
  float* rootInput = nullptr;
  CUDA_OK(cudaMalloc(&rootInput, 64 * sizeof(float)));
  const std::vector<float> ones(64, 1.0f);
  CUDA_OK(cudaMemcpy(rootInput, ones.data(), 64 * sizeof(float), cudaMemcpyHostToDevice));
  UPLOADS_LANDED();
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclBroadcast(rootInput, rootInput, 64, ncclFloat32, 0, ranks.comm(0), ranks.stream(0)));
  NCCL_OK(ncclBroadcast(onHost.data(), onDevice, 64, ncclFloat32, 0, ranks.comm(1), ranks.stream(1)));
  NCCL_OK(ncclGroupEnd());
  CUDA_OK(cudaStreamSynchronize(ranks.stream(0)));
  CUDA_OK(cudaStreamSynchronize(ranks.stream(1)));
  std::vector<float> got(64);
  CUDA_OK(cudaMemcpy(got.data(), onDevice, 64 * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, ones);
  cudaFree(rootInput);
  cudaFree(onDevice);
}

}  // namespace
