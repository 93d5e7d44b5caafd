#include "device/cuda_executor.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "device/cuda_check.h"
#include "device/device_memory.h"
#include "device/driver_api.h"
#include "device/gpu_offer.h"
#include "device/peer_launch.h"
#include "device/ring_launch.h"
#include "protocols/fifo_handle.h"
#include "protocols/status.h"
#include "topology/topology.h"
#include "transport/rdma/gpu_direct.h"

namespace hora::device {
namespace {

// Where the abort flags start in the host-mapped block, after the failure
// record (a cache line of its own). The kernels' done word follows them, on
// a line of its own.
constexpr std::size_t kAbortFlagsOffset = protocols::kCacheLineBytes;
static_assert(sizeof(DeviceFailure) <= kAbortFlagsOffset, "the failure record fits its line");
std::size_t kernelsDoneOffset(int nranks) {
  return protocols::roundUpTo(kAbortFlagsOffset + sizeof(std::uint32_t) * static_cast<std::size_t>(nranks),
                              protocols::kCacheLineBytes);
}
// What a wait that found the ranks' calls differ saw (a
// protocols::Status: OtherProtocol or Overflow), said of the rank that saw
// it and the peer whose data it was.
const char* mismatchReason(protocols::Status status) {
  return status == protocols::Status::OtherProtocol
             ? "the data came by a different protocol (LL or Simple) from the one the receiving rank's call chose, "
               "so the calls differ in size (the ranks disagree on the collective's kind, count or type)"
             : "the data came in pieces of another size than the receiving rank's call expects (the ranks "
               "disagree on the collective's kind, count or type)";
}

// Whether `stream` is being captured into a graph (CudaExecutor::launched).
bool isCapturing(void* stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaCheck(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capture), "cudaStreamIsCapturing");
  return capture != cudaStreamCaptureStatusNone;
}

// CUDA's id of `stream`, unique among the process's streams for its
// lifetime (a destroyed stream's handle may come back for a new stream;
// its id does not).
unsigned long long streamId(void* stream) {
#if CUDART_VERSION >= 12000
  unsigned long long id = 0;
  cudaCheck(cudaStreamGetId(static_cast<cudaStream_t>(stream), &id), "cudaStreamGetId");
  return id;
#else
  return reinterpret_cast<std::uintptr_t>(stream);  // (no ids before CUDA 12.0)
#endif
}

// Said once per process, where ranks of it share a GPU each driven by its
// own thread: CUDA loads a kernel lazily, at its first launch, and loading
// can wait for the kernels running on the device. hora loads its own at
// set-up (ring_launch.h), not the program's: a rank's thread that
// launches a program kernel for the first time could wait for a peer
// rank's hora kernel, which waits for this rank's next call, until the
// deadline. CUDA_MODULE_LOADING=EAGER loads every kernel as CUDA starts.
void hintEagerLoading(int rank) {
  static std::once_flag once;
  std::call_once(once, [rank] {
    auto* const loadingMode = driverFunction<CUresult(CUmoduleLoadingMode*)>("cuModuleGetLoadingMode");
    CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
    bool lazy = false;
    if (loadingMode != nullptr && loadingMode(&mode) == CUDA_SUCCESS)
      lazy = mode == CU_MODULE_LAZY_LOADING;
    else
      lazy = env::get({"CUDA_MODULE_LOADING"}).value_or("") != "EAGER";
    if (lazy)
      HORA_LOG(Info, "rank ", rank, ": ranks of this process share a GPU and CUDA loads kernels lazily; set "
               "CUDA_MODULE_LOADING=EAGER before CUDA starts, or a first launch of a kernel of the program may "
               "wait for a peer rank's kernel, which waits for this rank, until HORA_TIMEOUT");
  });
}

// How long a call that waits before its launch (launch_order.h) polls
// without sleeping: a small collective's kernel starts and ends within
// tens of microseconds, and a sleep would add more than that to every call.
constexpr auto kQueueSpin = std::chrono::milliseconds(1);

// Every FIFO: four slots of 128 KiB. A ring step (two slots) then moves
// while the previous one drains; a piece is large against the block's two
// barriers and handshake, small enough that a ring fills its pipeline fast.
constexpr std::uint64_t kSlotBytes = 128 << 10;
constexpr std::uint64_t kSlotCount = 4;
// Every LL FIFO (a ring channel's second): four slots of 16 KiB, 8192
// lines. A full piece (device_plan.h: half a slot of data) takes its
// header pair and a line per 4 bytes, 2050 lines, a little more than a
// slot: three full pieces are in flight before a sender waits for credits.
// A piece never needs more lines than the ring holds, or its sender would
// wait for room for ever.
constexpr std::uint64_t kLLSlotBytes = 16 << 10;
constexpr std::uint64_t kLLSlotCount = 4;
static_assert(2 + llPieceBytes(kLLSlotBytes) / 4 <= kLLSlotCount * kLLSlotBytes / sizeof(std::uint64_t),
              "an LL piece must fit in the LL FIFO");
constexpr std::uint64_t kFifoAlignment = 4096;
// Operations up to this size use LL unless HORA_DEVICE_LL_MAX_BYTES or
// NCCL_PROTO say otherwise.
constexpr std::uint64_t kDefaultLLMaxBytes = 64 << 10;
// As many as the ring allows; the occupancy check may lower it.
constexpr int kDefaultMaxChannels = DeviceRing::kMaxChannels;

// Where one kind of FIFO lies in a rank's FIFO block: from `start`, one
// every `stride` bytes, each of slotCount slots of slotBytes.
struct FifoRegion {
  std::uint64_t start;
  std::uint64_t stride;
  std::uint64_t slotBytes;
  std::uint64_t slotCount;
};

std::uint64_t fifoStride(std::uint64_t slotBytes, std::uint64_t slotCount) {
  return protocols::roundUpTo(protocols::fifoLayout(slotBytes, slotCount).totalBytes, kFifoAlignment);
}

// Which process a rank runs in, among those of its host: the pid, and a
// random number drawn once per process, since processes in different pid
// namespaces of one host may have the same pid.
std::uint64_t processIdentity() {
  static const std::uint64_t identity = [] {
    std::random_device random;
    const std::uint64_t drawn = (std::uint64_t{random()} << 32) ^ random();
    return drawn ^ static_cast<std::uint64_t>(::getpid());
  }();
  return identity;
}

// What each rank tells the others about its FIFOs (after its GPU: gpu_offer.h).
struct FifoOffer {
  cudaIpcMemHandle_t handle;
  std::uint64_t base;   // this rank's address of its FIFOs (in host memory: its process's host address)
  std::int32_t shareable;  // handle is valid
  // The FIFOs are in pinned host memory: the shared-memory file that the
  // offering process holds open as `fd`, of `bytes` bytes.
  std::int32_t inHostMemory;
  std::int32_t fd;
  std::int32_t padding;
  transport::FileIdentity identity;
  std::uint64_t bytes;
};

// The UUIDs of the GPUs this process sees, by CUDA ordinal.
std::vector<GpuUuid> visibleGpus() {
  int count = 0;
  cudaCheck(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  std::vector<GpuUuid> uuids(static_cast<std::size_t>(count));
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp properties{};
    cudaCheck(cudaGetDeviceProperties(&properties, ordinal), "cudaGetDeviceProperties");
    std::memcpy(uuids[static_cast<std::size_t>(ordinal)].data(), properties.uuid.bytes, sizeof(GpuUuid));
  }
  return uuids;
}

// The CUDA ordinal of the GPU `uuid` in this process; -1 where it does not
// see it (CUDA_VISIBLE_DEVICES). `visible`: visibleGpus().
int ordinalOf(const std::vector<GpuUuid>& visible, const GpuUuid& uuid) {
  const auto found = std::find(visible.begin(), visible.end(), uuid);
  return found == visible.end() ? -1 : static_cast<int>(found - visible.begin());
}

// Whether GPU `device` can write the memory of the GPU `uuid` directly
// (peer access over NVLink or PCIe), as this process sees them.
bool reachesDirectly(int device, const std::vector<GpuUuid>& visible, const GpuUuid& uuid) {
  const int peerDevice = ordinalOf(visible, uuid);
  if (peerDevice < 0) return false;
  int canAccess = 0;
  cudaCheck(cudaDeviceCanAccessPeer(&canAccess, device, peerDevice), "cudaDeviceCanAccessPeer");
  return canAccess != 0;
}

// `peer`'s FIFOs in pinned host memory, as this process's GPU addresses
// them. In this process they are registered with cudaHostRegisterPortable,
// so every GPU maps them already; from another process, its shared-memory
// file is opened, mapped and registered here (added to `mappings`).
char* mapPeerHostFifos(const GpuOffer& gpu, const FifoOffer& offer, std::vector<transport::ShmSegment>& mappings) {
  void* host = reinterpret_cast<void*>(offer.base);
  if (gpu.process != processIdentity()) {
    transport::ShmSegment segment =
        transport::ShmSegment::openPeer(static_cast<pid_t>(gpu.pid), offer.fd, offer.identity, offer.bytes, "");
    cudaCheck(cudaHostRegister(segment.data(), segment.size(), cudaHostRegisterMapped | cudaHostRegisterPortable),
              "registering a peer's FIFOs in host memory (cudaHostRegister)");
    host = segment.data();
    mappings.push_back(std::move(segment));
  }
  void* onDevice = nullptr;
  cudaCheck(cudaHostGetDevicePointer(&onDevice, host, 0), "cudaHostGetDevicePointer");
  return static_cast<char*>(onDevice);
}

// `peer`'s FIFO memory as this process addresses it: in host memory,
// mapPeerHostFifos(); in device memory, its pointer within this process,
// or its allocation opened by CUDA IPC (added to `mappings`), after
// enabling access to its GPU. Null, with *why set, where this GPU cannot
// reach the peer's or its process could not export the memory.
// `device` and `deviceUuid`: this rank's GPU; `visible`: visibleGpus().
char* mapPeerFifos(int device, const GpuUuid& deviceUuid, const std::vector<GpuUuid>& visible, int peer,
                   const GpuOffer& gpu, const FifoOffer& offer, std::vector<void*>& mappings,
                   std::vector<transport::ShmSegment>& hostMappings, std::string* why) {
  if (offer.inHostMemory != 0) {
    try {
      return mapPeerHostFifos(gpu, offer, hostMappings);
    } catch (const Error& error) {
      cudaGetLastError();
      *why = strCat("this process cannot map the FIFOs of rank ", peer, " in host memory: ", error.what());
      return nullptr;
    }
  }
  if (gpu.uuid != deviceUuid) {
    // The peer's ordinal is its process's; this process may number the GPU
    // differently, or not see it at all. placeFifos() put the FIFOs of a
    // peer whose GPU this one does not see or reach in host memory, so this
    // only fails where CUDA answers otherwise than it did at set-up.
    if (!reachesDirectly(device, visible, gpu.uuid)) {
      *why = strCat("GPU ", device, " cannot reach ", gpuName(gpu.uuid), " of rank ", peer,
                    " directly, although it could when the ranks compared");
      return nullptr;
    }
    const int peerDevice = ordinalOf(visible, gpu.uuid);
    const cudaError_t enabled = cudaDeviceEnablePeerAccess(peerDevice, 0);
    if (enabled != cudaErrorPeerAccessAlreadyEnabled) cudaCheck(enabled, "cudaDeviceEnablePeerAccess");
    cudaGetLastError();
  }
  if (gpu.process == processIdentity()) return reinterpret_cast<char*>(offer.base);
  if (offer.shareable == 0) {
    *why = strCat("rank ", peer, " could not export its FIFOs to other processes (cudaIpcGetMemHandle failed there)");
    return nullptr;
  }
  void* mapping = nullptr;
  cudaCheck(cudaIpcOpenMemHandle(&mapping, offer.handle, cudaIpcMemLazyEnablePeerAccess),
            "opening a peer's FIFOs (cudaIpcOpenMemHandle)");
  mappings.push_back(mapping);
  return static_cast<char*>(mapping);
}

// The set-up's writes to device memory, on a stream of its own that the
// set-up waits for before anything depends on them. cudaMemset and a
// cudaMemcpy from pageable memory run on the legacy default stream and may
// return before their writes land, and the kernels that read this memory
// run on the program's non-blocking streams, which are not ordered after
// that stream: a peer's first kernel could write into a FIFO that this
// rank's clearing then wipes (its counters back at zero: a hang, or a
// "collective mismatch" between ranks whose calls agree), or a kernel read
// a DeviceRing not yet written.
class SetupWrites {
 public:
  SetupWrites() { cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~SetupWrites() { cudaStreamDestroy(stream_); }
  SetupWrites(const SetupWrites&) = delete;
  SetupWrites& operator=(const SetupWrites&) = delete;

  void clear(void* to, std::size_t bytes) {
    cudaCheck(cudaMemsetAsync(to, 0, bytes, stream_), "clearing the FIFOs (cudaMemsetAsync)");
  }
  // `from` must stay as it is until finish().
  void upload(void* to, const void* from, std::size_t bytes) {
    cudaCheck(cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
  }
  // Waits until every write so far has landed.
  void finish() { cudaCheck(cudaStreamSynchronize(stream_), "waiting for the set-up's writes (cudaStreamSynchronize)"); }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace

CudaExecutor::CudaExecutor(CudaExecutorContext context, const Deadline& deadline)
    : ctx_(std::move(context)),
      timeoutNs_(static_cast<std::uint64_t>(ctx_.timeout.count()) * 1000000ull) {
  DeviceScope scope(ctx_.device);
  shape_.nranks = ctx_.nranks;
  shape_.slotBytes = kSlotBytes;
  shape_.llSlotBytes = kLLSlotBytes;
  collectivesPerLaunch_ = static_cast<int>(std::clamp<long long>(
      env::getInt({"HORA_DEVICE_COLLECTIVES_PER_LAUNCH"}, DeviceRingLaunch::kMaxCollectives), 1,
      DeviceRingLaunch::kMaxCollectives));
  // One host-mapped block: the failure record, then an abort flag per peer
  // rank (each FIFO's waits poll the flag of the rank at its other end).
  const std::size_t mappedBytes = protocols::roundUpTo(kernelsDoneOffset(ctx_.nranks) + sizeof(std::uint64_t), 4096);
  void* mapped = nullptr;
  cudaCheck(cudaHostAlloc(&mapped, mappedBytes, cudaHostAllocMapped | cudaHostAllocPortable),
            "allocating the abort flags (cudaHostAlloc)");
  std::memset(mapped, 0, mappedBytes);
  mapped_ = mapped;
  failure_ = static_cast<DeviceFailure*>(mapped);
  failure_->self = ctx_.rank;
  failure_->origin = -1;
  abortFlags_ = reinterpret_cast<std::uint32_t*>(static_cast<char*>(mapped) + kAbortFlagsOffset);
  kernelsDone_ = reinterpret_cast<std::uint64_t*>(static_cast<char*>(mapped) + kernelsDoneOffset(ctx_.nranks));
  try {
    cudaCheck(cudaHostGetDevicePointer(reinterpret_cast<void**>(&failureOnDevice_), failure_, 0),
              "cudaHostGetDevicePointer");
    cudaCheck(cudaHostGetDevicePointer(reinterpret_cast<void**>(&kernelsDoneOnDevice_), kernelsDone_, 0),
              "cudaHostGetDevicePointer");
    exchangeFifos(deadline);
  } catch (...) {
    release();  // a constructor that throws runs no destructor
    throw;
  }
}

void CudaExecutor::exchangeFifos(const Deadline& deadline) {
  const int n = ctx_.nranks;
  int pos = 0;
  for (int p = 0; p < n; ++p)
    if (ctx_.ringRanks[static_cast<std::size_t>(p)] == ctx_.rank) pos = p;
  const int next = ctx_.ringRanks[static_cast<std::size_t>((pos + 1) % n)];
  const int previous = ctx_.ringRanks[static_cast<std::size_t>((pos + n - 1) % n)];

  // Every kernel is loaded before the ranks meet below: once the last rank
  // is past the last meeting, the others may be launching, and loading a
  // kernel can wait for running ones (ring_launch.h).
  preloadRingKernels();
  preloadPeerKernel();
  // 1. GPUs: how many channels every rank can run at once.
  cudaDeviceProp properties{};
  cudaCheck(cudaGetDeviceProperties(&properties, ctx_.device), "cudaGetDeviceProperties");
  std::vector<GpuOffer> gpus(static_cast<std::size_t>(n));
  GpuOffer& mine = gpus[static_cast<std::size_t>(ctx_.rank)];
  mine.hostHash = ctx_.hostHash;
  mine.process = processIdentity();
  mine.pid = ::getpid();
  mine.device = ctx_.device;
  std::memcpy(mine.uuid.data(), properties.uuid.bytes, mine.uuid.size());
  mine.residentBlocks = ringBlocksPerMultiprocessor() * properties.multiProcessorCount;
  mine.minChannels = static_cast<std::int32_t>(env::getInt({"HORA_MIN_NCHANNELS", "NCCL_MIN_NCHANNELS"}, 1));
  mine.maxChannels = static_cast<std::int32_t>(
      env::getInt({"HORA_MAX_NCHANNELS", "NCCL_MAX_NCHANNELS"}, kDefaultMaxChannels));
  mine.llMaxBytes = deviceLLMaxBytes(env::get({"NCCL_PROTO"}),
                                     env::getBytes({"HORA_DEVICE_LL_MAX_BYTES"}, kDefaultLLMaxBytes));
  mine.p2pDisabled = topology::TransportPolicy::fromEnvironment().p2pDisabled ? 1 : 0;
  const std::optional<std::string> maxQueued = env::get({"HORA_DEVICE_MAX_QUEUED"});
  if (maxQueued) {
    const long long queued = env::getInt({"HORA_DEVICE_MAX_QUEUED"}, 1);
    HORA_CHECK_ARG(queued >= 0, "HORA_DEVICE_MAX_QUEUED must be 0 or more, got ", queued);
    mine.launchSetting =
        static_cast<std::int32_t>(std::min<long long>(queued, std::numeric_limits<std::int32_t>::max()));
  } else {
    mine.launchSetting = -1;
  }
  startWord_ = takeStartWord();
  mine.startWord = reinterpret_cast<std::uintptr_t>(startWord_.host);
  ctx_.bootstrap.allGather(gpus.data(), sizeof(GpuOffer), deadline);
  const ChannelAgreement agreed = agreeOnChannels(gpus, ctx_.ringRanks, static_cast<bool>(ctx_.networkConnector));
  if (!agreed.unusable.empty()) {
    unusable_ = agreed.unusable;  // the same verdict on every rank: host buffers still work
    HORA_LOG(Info, "rank ", ctx_.rank, ": no collectives on device buffers: ", unusable_);
    returnStartWord(startWord_.host);
    startWord_ = {};
    return;
  }
  const int channels = agreed.maxChannels;
  shape_.maxChannels = channels;
  shape_.minChannels = agreed.minChannels;
  shape_.llMaxBytes = agreed.llMaxBytes;
  const int inThisProcess = ranksOnGpu(gpus, mine, /*sameProcess=*/true);
  gpuSharedInProcess_ = inThisProcess > 1;
  for (const GpuOffer& g : gpus)
    if (ranksOnGpu(gpus, g, /*sameProcess=*/true) > 1) legacyStreamRefused_ = true;
  if (gpuSharedInProcess_) {
    chooseLaunchRule(gpus, mine);
    hintEagerLoading(ctx_.rank);
  }
  if (launchRule_ != LaunchRule::Started) {  // nobody reads this rank's word
    returnStartWord(startWord_.host);
    startWord_ = {};
  }
  std::vector<ProcessWatch::Watched> peerProcesses;
  for (int peer = 0; peer < n; ++peer) {
    const GpuOffer& g = gpus[static_cast<std::size_t>(peer)];
    // One host hash means one machine and one pid namespace
    // (bootstrap::localHostHash): there the peer's pid names the peer.
    if (g.process != mine.process && g.hostHash == mine.hostHash)
      peerProcesses.push_back({static_cast<pid_t>(g.pid), peer});
  }
  watchPeerProcesses(std::move(peerProcesses));

  // Where each rank's FIFOs live (gpu_offer.h): every rank says which GPUs
  // of its host its own reaches directly.
  const std::vector<GpuUuid> visible = visibleGpus();
  const auto nn = static_cast<std::size_t>(n);
  std::vector<std::uint8_t> reaches(nn * nn);
  const std::vector<std::uint8_t> row =
      reachRow(gpus, ctx_.rank, [&](const GpuUuid& uuid) { return reachesDirectly(ctx_.device, visible, uuid); });
  std::copy(row.begin(), row.end(), reaches.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(ctx_.rank) * nn));
  ctx_.bootstrap.allGather(reaches.data(), nn, deadline);
  const FifoPlacement placement = placeFifos(gpus, reaches)[static_cast<std::size_t>(ctx_.rank)];

  // 2. FIFOs: this rank's, zeroed, and a handle other processes can open.
  // The ring's Simple receive FIFOs (one per channel), one per sending rank
  // for point-to-point work, then the ring's LL receive FIFOs.
  const std::uint64_t stride = fifoStride(kSlotBytes, kSlotCount);
  const std::uint64_t llStride = fifoStride(kLLSlotBytes, kLLSlotCount);
  const std::uint64_t fifoCount = static_cast<std::uint64_t>(channels + n);
  const std::uint64_t llStart = stride * fifoCount;
  const std::uint64_t fifoBytes = llStart + llStride * static_cast<std::uint64_t>(channels);
  // Every allocation comes before the ranks' last meeting below: once a
  // rank is past it, its peers may be running kernels that wait for this
  // rank, and CUDA lists a device allocation among the calls that may wait
  // for the device.
  if (placement.inHostMemory) {
    // A new shared-memory file is zero-filled: the FIFOs start empty.
    hostFifos_ = transport::ShmSegment::create(protocols::roundUpTo(fifoBytes, transport::ShmSegment::pageBytes()));
    cudaCheck(cudaHostRegister(hostFifos_.data(), hostFifos_.size(), cudaHostRegisterMapped | cudaHostRegisterPortable),
              "registering the FIFOs in host memory (cudaHostRegister)");
    cudaCheck(cudaHostGetDevicePointer(&fifos_, hostFifos_.data(), 0), "cudaHostGetDevicePointer");
  } else {
    cudaCheck(cudaMalloc(&fifos_, fifoBytes), "allocating the FIFOs (cudaMalloc)");
  }
  cudaCheck(cudaMalloc(reinterpret_cast<void**>(&peerChannels_), sizeof(DeviceChannel) * static_cast<std::size_t>(n)),
            "cudaMalloc");
  cudaCheck(cudaMalloc(reinterpret_cast<void**>(&ringRanksDevice_), sizeof(int) * static_cast<std::size_t>(n)),
            "cudaMalloc");
  cudaCheck(cudaMalloc(&ring_, sizeof(DeviceRing)), "cudaMalloc");
  // The stop word, then the count of a launch's blocks that have ended
  // (QueuedKernels), which stays in device memory: only the kernels use it.
  cudaCheck(cudaMalloc(reinterpret_cast<void**>(&stopped_), 2 * sizeof(std::uint32_t)), "cudaMalloc");
  blocksEnded_ = stopped_ + 1;
  // Ring neighbours on other hosts: FIFOs in pinned host memory, which the
  // network proxy reads and fills.
  const bool nextRemote = gpus[static_cast<std::size_t>(next)].hostHash != mine.hostHash;
  const bool previousRemote = gpus[static_cast<std::size_t>(previous)].hostHash != mine.hostHash;
  const std::uint64_t stageBytes = stride * static_cast<std::uint64_t>(channels);
  auto allocateStage = [&](void** stage) {
    cudaCheck(cudaHostAlloc(stage, stageBytes, cudaHostAllocMapped | cudaHostAllocPortable),
              "allocating the FIFOs for the network proxy (cudaHostAlloc)");
    std::memset(*stage, 0, stageBytes);  // counters at 0: empty FIFOs
  };
  if (nextRemote) allocateStage(&sendStage_);
  if (previousRemote) allocateStage(&recvStage_);
  SetupWrites writes;
  if (!placement.inHostMemory) writes.clear(fifos_, fifoBytes);
  writes.clear(stopped_, 2 * sizeof(std::uint32_t));
  writes.finish();  // cleared before any peer learns where they are
  failure_->stopped = stopped_;
  std::vector<FifoOffer> offers(static_cast<std::size_t>(n));
  FifoOffer& offer = offers[static_cast<std::size_t>(ctx_.rank)];
  if (placement.inHostMemory) {
    offer.base = reinterpret_cast<std::uint64_t>(hostFifos_.data());
    offer.inHostMemory = 1;
    offer.fd = hostFifos_.fd();
    offer.identity = hostFifos_.identity();
    offer.bytes = hostFifos_.size();
  } else {
    offer.base = reinterpret_cast<std::uint64_t>(fifos_);
    offer.shareable = cudaIpcGetMemHandle(&offer.handle, fifos_) == cudaSuccess ? 1 : 0;
    if (offer.shareable == 0) cudaGetLastError();
  }
  ctx_.bootstrap.allGather(offers.data(), sizeof(FifoOffer), deadline);

  // Steps 3 to 5 come before the ranks' last meeting (below): mapping the
  // peers' FIFOs and the uploads may wait for the device, and a rank that
  // fails here must fail init on every rank, not leave its peers' kernels
  // waiting for it.
  const bool sameProcess = gpus[static_cast<std::size_t>(next)].process == processIdentity();
  std::optional<Error> setupFailed;
  try {
    [&] {
      // 3. Every rank's FIFOs, as this process addresses them. The ring needs
      // the next rank's; a peer this rank cannot reach only rules out
      // point-to-point work on device buffers.
      std::vector<char*> bases(static_cast<std::size_t>(n), nullptr);
      for (int peer = 0; peer < n; ++peer) {
        if (gpus[static_cast<std::size_t>(peer)].hostHash != mine.hostHash) {
          // Reached through the network proxy, by the ring only.
          if (peersUnusable_.empty())
            peersUnusable_ = strCat("rank ", peer, " is on another host, and point-to-point work on device buffers "
                                    "does not cross hosts yet");
          continue;
        }
        std::string why;
        bases[static_cast<std::size_t>(peer)] =
            peer == ctx_.rank ? static_cast<char*>(fifos_)
                              : mapPeerFifos(ctx_.device, mine.uuid, visible, peer, gpus[static_cast<std::size_t>(peer)],
                                             offers[static_cast<std::size_t>(peer)], peerMappings_, peerHostFifos_,
                                             &why);
        if (bases[static_cast<std::size_t>(peer)] == nullptr) {
          if (peer == next) fail(ErrorKind::InvalidUsage, "rank ", ctx_.rank, ": the next rank of the ring: ", why);
          if (peersUnusable_.empty()) peersUnusable_ = why;
        }
      }
      std::uint32_t* abortFlagsOnDevice = nullptr;
      cudaCheck(cudaHostGetDevicePointer(reinterpret_cast<void**>(&abortFlagsOnDevice), abortFlags_, 0),
                "cudaHostGetDevicePointer");
      failure_->abortFlags = abortFlagsOnDevice;
      failure_->ranks = n;
      // A FIFO between this rank and `peer`: its waits give up on that peer's
      // flag, which abort() raises with every other, and the exit of that
      // peer's process alone (a peer that exits after finishing its part never
      // leaves a wait on it unmet, so other waits go on).
      // `region` says which kind, `index` which of that kind, `base` whose.
      const FifoRegion simple{0, stride, kSlotBytes, kSlotCount};
      const FifoRegion ll{llStart, llStride, kLLSlotBytes, kLLSlotCount};
      auto fifo = [&](char* base, const FifoRegion& region, std::uint64_t index, int peer) {
        protocols::FifoHandle handle =
            protocols::fifoAt(base + region.start + region.stride * index, region.slotBytes, region.slotCount);
        handle.abortFlag = abortFlagsOnDevice + peer;
        return handle;
      };

      // 4. Point-to-point: the FIFO for this rank in every peer's memory, and
      // every peer's in this rank's.
      std::vector<DeviceChannel> peerChannels(static_cast<std::size_t>(n));
      for (int peer = 0; peer < n; ++peer) {
        char* base = bases[static_cast<std::size_t>(peer)];
        if (base == nullptr) continue;
        peerChannels[static_cast<std::size_t>(peer)].send =
            fifo(base, simple, static_cast<std::uint64_t>(channels + ctx_.rank), peer);
        peerChannels[static_cast<std::size_t>(peer)].recv =
            fifo(static_cast<char*>(fifos_), simple, static_cast<std::uint64_t>(channels + peer), peer);
      }
      writes.upload(peerChannels_, peerChannels.data(), sizeof(DeviceChannel) * peerChannels.size());

      // 5. The ring as the kernels see it. A neighbour on another host: the
      // FIFOs in host memory, as this GPU addresses them (its LL FIFOs are
      // never used: such a ring runs Simple only, and they stay this rank's).
      const FifoRegion stage{0, stride, kSlotBytes, kSlotCount};
      auto onDevice = [](void* hostMemory) {
        void* mapped = nullptr;
        if (hostMemory != nullptr)
          cudaCheck(cudaHostGetDevicePointer(&mapped, hostMemory, 0), "cudaHostGetDevicePointer");
        return static_cast<char*>(mapped);
      };
      char* sendStageOnDevice = onDevice(sendStage_);
      char* recvStageOnDevice = onDevice(recvStage_);
      DeviceRing ring{};
      ring.nranks = n;
      ring.pos = pos;
      for (int c = 0; c < channels; ++c) {
        const auto index = static_cast<std::uint64_t>(c);
        char* nextBase = nextRemote ? static_cast<char*>(fifos_) : bases[static_cast<std::size_t>(next)];
        ring.channels[c].send =
            nextRemote ? fifo(sendStageOnDevice, stage, index, next) : fifo(nextBase, simple, index, next);
        ring.channels[c].recv = previousRemote ? fifo(recvStageOnDevice, stage, index, previous)
                                               : fifo(static_cast<char*>(fifos_), simple, index, previous);
        ring.llChannels[c].send = fifo(nextBase, ll, index, next);
        ring.llChannels[c].recv = fifo(static_cast<char*>(fifos_), ll, index, previous);
      }
      writes.upload(ringRanksDevice_, ctx_.ringRanks.data(), sizeof(int) * static_cast<std::size_t>(n));
      ring.ranks = ringRanksDevice_;
      writes.upload(ring_, &ring, sizeof(DeviceRing));
      writes.finish();  // in place before this rank's first kernel reads them
    }();
  } catch (const Error& error) {
    setupFailed = error;
  }
  // The ranks meet: each says whether its step succeeded (a rank that
  // failed fails init on every rank, instead of leaving its peers' kernels
  // waiting for it) and whether it reaches all of its peers' FIFOs, so
  // that all refuse point-to-point work alike.
  auto meet = [&](const std::optional<Error>& mine, const char* step) {
    struct SetupStatus {
      std::int32_t failed;
      std::int32_t peersUnusable;
    };
    std::vector<SetupStatus> statuses(static_cast<std::size_t>(n));
    statuses[static_cast<std::size_t>(ctx_.rank)] = {mine ? 1 : 0, peersUnusable_.empty() ? 0 : 1};
    ctx_.bootstrap.allGather(statuses.data(), sizeof(SetupStatus), deadline);
    if (mine) throw *mine;
    for (int peer = 0; peer < n; ++peer) {
      const SetupStatus& status = statuses[static_cast<std::size_t>(peer)];
      if (status.failed != 0)
        throw Error(ErrorKind::Remote,
                    strCat("rank ", ctx_.rank, ": rank ", peer, " could not ", step,
                           " for collectives on device buffers (its own error says why)"),
                    peer);
      if (status.peersUnusable != 0 && peersUnusable_.empty())
        peersUnusable_ = strCat("rank ", peer, " cannot reach the FIFOs of all of its peers");
    }
  };
  meet(setupFailed, "set up its FIFOs");
  // Every peer has opened this rank's FIFO file by now.
  if (placement.inHostMemory) hostFifos_.closeDescriptor();
  // A ring across hosts: the network proxy's connections, then the last
  // meeting (nothing in between waits for the device).
  if (agreed.crossesHosts) {
    NetworkRelays relays;
    std::optional<Error> connectFailed;
    try {
      relays = connectNetwork(channels, stride, nextRemote ? next : -1, previousRemote ? previous : -1);
    } catch (const Error& error) {
      connectFailed = error;
    }
    meet(connectFailed, "connect its network proxy");
    if (relays.send || relays.recv)
      proxy_ = std::make_unique<transport::proxy::NetworkProxy>(std::move(relays.send), std::move(relays.recv),
                                                                [this](const Error& error) { proxyFailed(error); });
  }
  HORA_LOG(Info, "rank ", ctx_.rank, ": CUDA executor on GPU ", ctx_.device, ", up to ", channels,
           " channels of ", kRingThreads, " threads, ", inThisProcess,
           " rank(s) of this process on this GPU, LL up to ", shape_.llMaxBytes, " bytes; next rank ", next,
           nextRemote    ? strCat(" on another host (network proxy, ", networkPath(next), ")")
           : sameProcess ? std::string(" in this process")
           : offers[static_cast<std::size_t>(next)].inHostMemory != 0
               ? std::string(" in another process (its FIFOs in shared host memory)")
               : std::string(" in another process (CUDA IPC)"),
           placement.inHostMemory ? strCat("; receive FIFOs in pinned host memory: ", placement.why)
                                  : std::string("; receive FIFOs in GPU memory"));
}

std::string CudaExecutor::networkPath(int peer) const {
  // (What GPUDirect RDMA the machine offers is said for verbs only: the
  // dma-buf facts are libibverbs'.)
  const topology::TransportKind kind = networkConnector_->kindOf(peer);
  return strCat(topology::transportName(kind), ", device data ",
                kind == topology::TransportKind::Ib
                    ? transport::rdma::describeDeviceDataPath(transport::rdma::gpuDirectFacts(ctx_.device))
                    : std::string("staged through pinned host memory"));
}

CudaExecutor::NetworkRelays CudaExecutor::connectNetwork(int channels, std::uint64_t stride, int sendPeer,
                                                          int recvPeer) {
  networkConnector_ = ctx_.networkConnector();  // every rank of the ring, at this point
  NetworkRelays relays;
  if (sendPeer < 0 && recvPeer < 0) return relays;
  // The FIFOs as the host addresses them; the relays never wait on them,
  // so their abort flags are only for the kernels.
  auto hostFifos = [&](void* stage, int peer) {
    std::vector<protocols::FifoHandle> fifos;
    for (int c = 0; c < channels; ++c) {
      protocols::FifoHandle handle =
          protocols::fifoAt(static_cast<char*>(stage) + stride * static_cast<std::uint64_t>(c), kSlotBytes, kSlotCount);
      handle.abortFlag = abortFlags_ + peer;
      fifos.push_back(handle);
    }
    return fifos;
  };
  // Sends first on every rank, as the communicator's own ring does: a
  // receive waits for its peer's send to connect.
  if (sendPeer >= 0)
    relays.send = std::make_unique<transport::proxy::FifoSendRelay>(hostFifos(sendStage_, sendPeer),
                                                                     networkConnector_->sendTo(sendPeer, /*busy=*/true));
  if (recvPeer >= 0)
    relays.recv = std::make_unique<transport::proxy::FifoRecvRelay>(hostFifos(recvStage_, recvPeer),
                                                                     networkConnector_->recvFrom(recvPeer));
  return relays;
}

void CudaExecutor::proxyFailed(const Error& error) {
  // After ncclCommAbort the abort is the first cause: it closed the
  // proxy's connections itself.
  if (aborted_.load(std::memory_order_acquire)) return;
  {
    std::lock_guard<std::mutex> lock(proxyErrorMutex_);
    proxyError_ = Error(error.kind(), strCat("rank ", ctx_.rank, ": the network proxy of its kernels failed: ",
                                             error.what()),
                        error.failedRank());
  }
  proxyFailed_.store(true, std::memory_order_release);
  // Every wait of this rank's kernels stops; failure() gives the cause.
  raiseAbortFlags(error.failedRank() >= 0 ? error.failedRank() : ctx_.rank);
  HORA_LOG(Warn, "rank ", ctx_.rank, ": the network proxy of its kernels failed: ", error.what());
}

void CudaExecutor::raiseAbortFlags(int origin, int onlyPeer) {
  // A raised flag names the rank whose failure it stands for, which the
  // kernels it stops pass on (device_work.h: a stop note without a cause);
  // a flag raised before keeps what it says.
  const int first = onlyPeer >= 0 ? onlyPeer : 0;
  const int last = onlyPeer >= 0 ? onlyPeer + 1 : ctx_.nranks;
  for (int peer = first; peer < last; ++peer) {
    std::uint32_t lowered = 0;
    __atomic_compare_exchange_n(&abortFlags_[peer], &lowered, stopNote(origin, protocols::Status::Ok), false,
                                __ATOMIC_RELEASE, __ATOMIC_RELAXED);
  }
}

void CudaExecutor::watchPeerProcesses(std::vector<ProcessWatch::Watched> peers) {
  if (peers.empty()) return;
  // The callback runs on the watch's thread: it only stores and raises the
  // flag that this rank's waits on that peer poll.
  gonePids_ = std::make_unique<std::atomic<pid_t>[]>(static_cast<std::size_t>(ctx_.nranks));
  watch_ = std::make_unique<ProcessWatch>(std::move(peers), [this](const ProcessWatch::Watched& gone) {
    // After an abort() the abort is the first cause, and stays what is told.
    if (!aborted_.load(std::memory_order_acquire)) gonePids_[gone.rank].store(gone.pid, std::memory_order_release);
    raiseAbortFlags(gone.rank, gone.rank);
    HORA_LOG(Info, "rank ", ctx_.rank, ": rank ", gone.rank, " (pid ", gone.pid,
             ") exited; this rank's kernels stop waiting");
  });
  HORA_LOG(Trace, "rank ", ctx_.rank, ": watching ", watch_->watchedByPidfd(), " peer process(es) by pidfd");
}

CudaExecutor::~CudaExecutor() { release(); }

void CudaExecutor::release() {
  // Frees wait for this rank's kernels (cudaFree synchronises the device).
  // The caller's device comes back as DeviceScope says (not on a thread
  // that had no context).
  std::optional<DeviceScope> scope;
  try {
    scope.emplace(ctx_.device);
  } catch (const Error&) {
    cudaGetLastError();  // hora's own error; the frees below are tried all the same
  }
  // The proxy stops before the memory it relays goes, and its connections
  // after it. On an orderly destroy it first sends what the kernels
  // published and ends its stream, so the peer's proxy ends quietly.
  if (proxy_ && !aborted_.load(std::memory_order_acquire) && !proxyFailed_.load(std::memory_order_acquire))
    proxy_->finish(ctx_.timeout);
  proxy_.reset();
  networkConnector_.reset();
  if (ring_ != nullptr) cudaFree(ring_);
  if (ringRanksDevice_ != nullptr) cudaFree(ringRanksDevice_);
  if (stopped_ != nullptr) cudaFree(stopped_);
  stopped_ = blocksEnded_ = nullptr;
  for (void* mapping : peerMappings_) cudaIpcCloseMemHandle(mapping);
  peerMappings_.clear();
  if (peerChannels_ != nullptr) cudaFree(peerChannels_);
  peerChannels_ = nullptr;
  for (transport::ShmSegment& segment : peerHostFifos_) cudaHostUnregister(segment.data());
  peerHostFifos_.clear();
  if (hostFifos_.data() != nullptr) {
    cudaHostUnregister(hostFifos_.data());
    hostFifos_ = transport::ShmSegment();
  } else if (fifos_ != nullptr) {
    cudaFree(fifos_);
  }
  if (sendStage_ != nullptr) cudaFreeHost(sendStage_);
  if (recvStage_ != nullptr) cudaFreeHost(recvStage_);
  sendStage_ = recvStage_ = nullptr;
  // The watch raises the flag: it stops before the flag goes.
  watch_.reset();
  if (mapped_ != nullptr) cudaFreeHost(mapped_);
  returnStartWord(startWord_.host);
  startWord_ = {};
  if (ownStream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(ownStream_));
  if (lastLaunch_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(lastLaunch_));
  lastLaunch_ = nullptr;
  ownStream_ = nullptr;
  ring_ = fifos_ = nullptr;
  ringRanksDevice_ = nullptr;
  mapped_ = nullptr;
  abortFlags_ = nullptr;
  failure_ = failureOnDevice_ = nullptr;
  cudaGetLastError();
}

void CudaExecutor::abort(int origin) {
  if (abortFlags_ == nullptr) return;
  aborted_.store(true, std::memory_order_release);
  raiseAbortFlags(origin >= 0 ? origin : ctx_.rank);
  // The proxies of neighbours on other hosts see the end at once, and stop
  // their kernels, instead of at their deadline.
  if (networkConnector_) networkConnector_->shutdown();
}

std::optional<Error> CudaExecutor::failure() const {
  if (proxyFailed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(proxyErrorMutex_);
    return proxyError_;  // the first cause: the kernels stopped because of it
  }
  if (failure_ == nullptr) return std::nullopt;
  const auto status = static_cast<protocols::Status>(__atomic_load_n(&failure_->status, __ATOMIC_ACQUIRE));
  if (status == protocols::Status::Ok) return std::nullopt;
  const int peer = failure_->peer;
  const char* waited = failure_->sending != 0 ? "for room to send to" : "for data from";
  const pid_t gonePid = gonePids_ != nullptr && peer >= 0 && peer < ctx_.nranks
                           ? gonePids_[peer].load(std::memory_order_acquire)
                           : 0;
  if (status == protocols::Status::Aborted && gonePid != 0)
    // The first cause: the peer's exit raised the flag (an abort after it
    // changes nothing).
    return Error(ErrorKind::Remote,
                 strCat("rank ", ctx_.rank, ": rank ", peer, " (pid ", gonePid,
                        ", this host) exited while a kernel of this rank waited ", waited, " it"),
                 peer);
  switch (status) {
    case protocols::Status::Aborted:
      return Error(ErrorKind::InvalidUsage,
                   strCat("rank ", ctx_.rank, ": communicator aborted (ncclCommAbort) while a kernel waited ",
                          waited, " rank ", peer),
                   ctx_.rank);
    case protocols::Status::TimedOut:
      return Error(ErrorKind::Remote,
                   strCat("rank ", ctx_.rank, ": a kernel waited ", ctx_.timeout.count(), " ms (HORA_TIMEOUT) ",
                          waited, " rank ", peer, " on channel ", failure_->channel,
                          ": that rank stopped, or never made the matching call"),
                   peer);
    case protocols::Status::PeerStopped: {
      // A line holds a rank of this communicator; any other value (memory
      // a peer freed and reused) names nobody, and is not passed on as one.
      const int origin = failure_->origin >= 0 && failure_->origin < ctx_.nranks ? failure_->origin : -1;
      // A mismatch that rank found is a mismatch here too (the ranks behind
      // it would otherwise see only that it stopped).
      const auto cause = static_cast<protocols::Status>(failure_->cause);
      if (origin >= 0 && (cause == protocols::Status::OtherProtocol || cause == protocols::Status::Overflow))
        return Error(ErrorKind::InvalidUsage,
                     strCat("rank ", ctx_.rank, ": collective mismatch with rank ", origin, ", which found it and ",
                            "stopped, and the kernels waiting on it stopped in turn: ", mismatchReason(cause),
                            " (a kernel of this rank was waiting ", waited, " rank ", peer, ", block ",
                            failure_->channel, ")"),
                     origin);
      return Error(ErrorKind::Remote,
                   strCat("rank ", ctx_.rank, ": ", origin >= 0 ? strCat("rank ", origin) : std::string("a rank"),
                          " stopped first (its kernel failed, it was aborted, it exited or lost a peer, or a rank "
                          "waited for it until its deadline), and the kernels waiting on it stopped in turn: a kernel "
                          "of this rank was waiting ",
                          waited, " rank ", peer, " (block ", failure_->channel, ")"),
                   origin);
    }
    default:  // OtherProtocol, Overflow: the calls differ
      return Error(ErrorKind::InvalidUsage,
                   strCat("rank ", ctx_.rank, ": collective mismatch with rank ", peer, " on channel ",
                          failure_->channel, ": ", mismatchReason(status)),
                   peer);
  }
}

void CudaExecutor::check(std::span<const core::Op> ops) const {
  if (!unusable_.empty())
    fail(ErrorKind::InvalidUsage, "rank ", ctx_.rank, ": collectives on device buffers are not available: ",
         unusable_);
  bool peerWork = false;
  const void* groupPeerStream = peerStream(ops);
  for (const core::Op& op : ops) {
    if (isPeerKind(op.kind)) {
      peerWork = true;
      if (!peersUnusable_.empty())
        fail(ErrorKind::InvalidUsage, "rank ", ctx_.rank, ": ", core::opKindName(op.kind),
             " on device buffers is not available: ", peersUnusable_);
      if (streamOf(op) != groupPeerStream)
        fail(ErrorKind::InvalidUsage, "rank ", ctx_.rank, ": the sends and receives of one group on device buffers "
             "take one stream per communicator; this group gives ", core::opKindName(op.kind), " another");
    } else {
      planDeviceLaunch(op, shape_);  // throws for kinds without a device schedule
      if (op.reduce.scalarAt != nullptr && !isDeviceReadable(op.reduce.scalarAt, ctx_.device))
        fail(ErrorKind::InvalidArgument, "rank ", ctx_.rank, ": ", core::opKindName(op.kind),
             " on device buffers with a ncclRedOpCreatePreMulSum op whose scalar was given as ncclScalarDevice "
             "but lies where GPU ", ctx_.device, " cannot read it (pageable host memory, or another GPU's memory); "
             "pass memory of GPU ", ctx_.device, ", managed or pinned host memory, or use ncclScalarHostImmediate");
    }
    // The legacy default stream waits for every other blocking stream of the
    // process and they for it: the kernels of ranks sharing this GPU here
    // could not run at once, and would wait for each other until the deadline.
    const void* stream = streamOf(op);
    if (legacyStreamRefused_ && (stream == nullptr || stream == cudaStreamLegacy))
      fail(ErrorKind::InvalidUsage, "rank ", ctx_.rank, ": ", core::opKindName(op.kind),
           " on the legacy default stream (stream 0), while ranks of one process of this communicator share a "
           "GPU: their kernels must run at the same time, which that stream forbids; give each rank a stream "
           "of its own (cudaStreamCreateWithFlags with cudaStreamNonBlocking)");
  }
  if (peerWork) planPeerLaunch(ops, ctx_.rank, ctx_.nranks, shape_.maxChannels);  // throws what it cannot run
}

void* CudaExecutor::streamOf(const core::Op& op) const {
  return op.completeOnReturn && op.stream == nullptr ? ownStream() : op.stream;
}

void* CudaExecutor::ownStream() const {
  std::lock_guard<std::mutex> lock(ownStreamMutex_);  // check() and the worker thread's run() may race
  if (ownStream_ == nullptr) {
    DeviceScope scope(ctx_.device);
    cudaStream_t own = nullptr;
    cudaCheck(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking), "creating the communicator's stream");
    ownStream_ = own;
  }
  return ownStream_;
}

void* CudaExecutor::peerStream(std::span<const core::Op> ops) const {
  for (const core::Op& op : ops)
    if (isPeerKind(op.kind)) return streamOf(op);
  return nullptr;
}

void CudaExecutor::runPeers(std::span<const core::Op> ops) {
  const DevicePeerPlan plan = planPeerLaunch(ops, ctx_.rank, ctx_.nranks, shape_.maxChannels);
  auto* stream = static_cast<cudaStream_t>(peerStream(ops));
  for (const DevicePeerPlan::SelfCopy& copy : plan.copies)
    cudaCheck(cudaMemcpyAsync(copy.to, copy.from, copy.bytes, cudaMemcpyDeviceToDevice, stream),
              "copying a send to this rank into its receive (cudaMemcpyAsync)");
  if (plan.transfers.empty()) return;
  DevicePeerWork work{};
  work.peers = peerChannels_;
  std::copy(plan.transfers.begin(), plan.transfers.end(), work.ops);
  work.count = static_cast<int>(plan.transfers.size());
  work.timeoutNs = timeoutNs_;
  work.failure = failureOnDevice_;
  work.stopped = stopped_;
  const LaunchStream on = launchStream(stream);
  work.queue = admitKernel(/*collectives=*/0, on.capturing);
  orderAfterLastLaunch(on);
  launchPeers(work, stream);
  launched(on);
}

void CudaExecutor::chooseLaunchRule(const std::vector<GpuOffer>& gpus, const GpuOffer& mine) {
  // Every rank of the group decides from the same offers, so all of them
  // choose alike (and a rank never waits for a word its peer gave back).
  std::vector<long long> settings = {mine.launchSetting};
  bool everyWord = mine.startWord != 0;
  for (int peer = 0; peer < ctx_.nranks; ++peer) {
    const GpuOffer& g = gpus[static_cast<std::size_t>(peer)];
    if (peer == ctx_.rank || g.process != mine.process || g.uuid != mine.uuid) continue;
    gpuPeersInProcess_.push_back(peer);
    gpuPeerStartWords_.push_back(reinterpret_cast<const std::uint64_t*>(static_cast<std::uintptr_t>(g.startWord)));
    settings.push_back(g.launchSetting);
    everyWord = everyWord && g.startWord != 0;
  }
  const LaunchRuleChoice choice = groupLaunchRule(settings, everyWord);
  launchRule_ = choice.rule;
  maxUnfinished_ = choice.maxUnfinished;
  // Only the Started rule reads the peers' words (some may be null).
  if (launchRule_ != LaunchRule::Started) gpuPeerStartWords_.clear();
  gpuPeersStarted_.assign(gpuPeerStartWords_.size(), 0);
}

QueuedKernels CudaExecutor::admitKernel(int collectives, bool capturing) {
  if (launchRule_ == LaunchRule::None || capturing) return {};
  // The clock is read only once the call has to wait, once per look.
  std::optional<std::chrono::steady_clock::time_point> start;
  for (;;) {
    for (std::size_t i = 0; i < gpuPeerStartWords_.size(); ++i)
      gpuPeersStarted_[i] = __atomic_load_n(gpuPeerStartWords_[i], __ATOMIC_ACQUIRE);
    const LaunchWait wait = launchWait(launchRule_, maxUnfinished_, launches_,
                                       __atomic_load_n(kernelsDone_, __ATOMIC_ACQUIRE), gpuPeersStarted_);
    if (wait.kind == LaunchWait::Nothing) break;
    if (auto failed = failure()) throw *failed;
    if (aborted_.load(std::memory_order_acquire))
      fail(ErrorKind::InvalidUsage, "rank ", ctx_.rank, ": communicator aborted (ncclCommAbort)");
    const auto now = std::chrono::steady_clock::now();
    if (!start) start = now;
    const auto waited = now - *start;
    if (waited > ctx_.timeout) launchWaitTimedOut(wait);
    if (waited < kQueueSpin)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  QueuedKernels queue{++launches_.kernels, kernelsDoneOnDevice_, 0, nullptr, blocksEnded_};
  launches_.lastWasCollective = collectives > 0;
  if (collectives > 0 && launchRule_ == LaunchRule::Started) {
    launches_.collectives += static_cast<std::uint64_t>(collectives);
    queue.collective = launches_.collectives;
    queue.started = startWord_.device;
  }
  return queue;
}

void CudaExecutor::launchWaitTimedOut(const LaunchWait& wait) const {
  if (wait.kind == LaunchWait::PeerCollective) {
    const int peer = gpuPeersInProcess_[static_cast<std::size_t>(wait.peer)];
    fail(ErrorKind::Remote, "rank ", ctx_.rank, ": rank ", peer, " (this process, GPU ", ctx_.device,
         ") did not start its kernel of this communicator's collective #", launches_.collectives, " in ",
         ctx_.timeout.count(), " ms (HORA_TIMEOUT), and ranks that share a GPU in one process launch only behind",
         " each other's last collective (HORA_DEVICE_MAX_QUEUED): rank ", peer,
         " stopped making calls, or made different ones");
  }
  fail(ErrorKind::Remote, "rank ", ctx_.rank, ": its last kernel on GPU ", ctx_.device, " did not end in ",
       ctx_.timeout.count(), " ms (HORA_TIMEOUT), and a rank that shares its GPU with others of its process",
       " launches only behind it (HORA_DEVICE_MAX_QUEUED): it waits for a rank of this process that stopped",
       " making calls");
}

// A launch being captured into a graph is not ordered here, in either
// direction: a captured stream may not wait on an event recorded outside
// its capture, a stream outside it may not wait on one recorded inside
// (either error invalidates the program's capture), and its replays run
// when the program says. So a capturing stream never becomes the last
// stream, and the event is recorded after every launch outside a capture,
// on that launch's stream, not later on a stream that may have begun a
// capture or been destroyed since. What remains the program's part, as
// with NCCL: one stream per communicator in a graph, and replays not
// running at once with the communicator's calls on other streams.
CudaExecutor::LaunchStream CudaExecutor::launchStream(void* stream) {
  const bool capturing = isCapturing(stream);
  return {stream, capturing, capturing ? 0 : streamId(stream)};
}

void CudaExecutor::orderAfterLastLaunch(const LaunchStream& stream) {
  if (!anyLaunch_ || stream.capturing || stream.id == lastStreamId_) return;
  cudaCheck(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream.handle), static_cast<cudaEvent_t>(lastLaunch_), 0),
            "ordering this communicator's kernel after its last one, on another stream (cudaStreamWaitEvent)");
}

void CudaExecutor::launched(const LaunchStream& stream) {
  if (stream.capturing) return;
  if (lastLaunch_ == nullptr) {
    cudaEvent_t event = nullptr;
    cudaCheck(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    lastLaunch_ = event;
  }
  cudaCheck(cudaEventRecord(static_cast<cudaEvent_t>(lastLaunch_), static_cast<cudaStream_t>(stream.handle)),
            "recording this communicator's last launch (cudaEventRecord)");
  lastStreamId_ = stream.id;
  anyLaunch_ = true;
}

std::uint64_t CudaExecutor::nextCollective() const {
  return nextRingCall_ < ringCalls_.plans.size() ? ringCollectivesLaunched_ + 1 : kNoRingLaunch;
}

void CudaExecutor::launchNext() {
  const RingCalls& calls = ringCalls_;
  const std::size_t first = nextRingCall_;
  const std::size_t size = ringLaunchSize(calls.plans, calls.streams, first, collectivesPerLaunch_);
  DeviceRingLaunch launch{};
  launch.ring = static_cast<const DeviceRing*>(ring_);
  launch.timeoutNs = timeoutNs_;
  launch.failure = failureOnDevice_;
  launch.stopped = stopped_;
  launch.count = static_cast<std::int32_t>(size);
  int channels = 1;
  for (std::size_t k = 0; k < size; ++k) {
    const DeviceLaunchPlan& plan = calls.plans[first + k];
    const core::Op& op = *calls.ops[first + k];
    if (!ringKernelRuns(calls.plans[first].spec, plan.collective))
      fail(ErrorKind::Internal, "a ring kernel launch put ", core::opKindName(op.kind),
           " in a kernel that does not run it (its element type or reduction is not the copying one)");
    DeviceCollective& c = launch.collectives[k];
    c.protocol = plan.protocol;
    c.collective = plan.collective;
    c.root = op.root;
    c.channels = plan.channels;
    c.in = op.send;
    c.out = op.recv;
    c.count = plan.count;
    c.chunk = plan.chunk;
    c.align = plan.align;
    c.preMulScalar = plan.spec.scalarAt;
    channels = std::max(channels, plan.channels);
  }
  void* stream = const_cast<void*>(calls.streams[first]);
  const LaunchStream on = launchStream(stream);
  launch.queue = admitKernel(static_cast<int>(size), on.capturing);
  // Counted once admitted: a launch refused (a failure, a timeout) leaves
  // the call unfinished, and the communicator broken.
  nextRingCall_ = first + size;
  ringCollectivesLaunched_ += size;
  orderAfterLastLaunch(on);
  launchRing(calls.plans[first].spec, launch, channels, static_cast<cudaStream_t>(stream));
  launched(on);
}

void CudaExecutor::begin(std::span<const core::Op> ops) {
  RingCalls& calls = ringCalls_;
  calls.plans.clear();
  calls.ops.clear();
  calls.streams.clear();
  nextRingCall_ = 0;
  peerWork_ = false;
  for (const core::Op& op : ops) {
    if (auto failed = failure()) throw *failed;
    if (isPeerKind(op.kind)) {
      peerWork_ = true;  // all of the group's at once, in end()
      continue;
    }
    const DeviceLaunchPlan plan = planDeviceLaunch(op, shape_);
    if (plan.count == 0) continue;
    if (plan.copyOnly) {
      if (op.send != op.recv)
        cudaCheck(cudaMemcpyAsync(op.recv, op.send, op.bytes, cudaMemcpyDeviceToDevice,
                                  static_cast<cudaStream_t>(streamOf(op))),
                  "copying a one-rank collective's input to its output (cudaMemcpyAsync)");
      continue;
    }
    calls.plans.push_back(plan);
    calls.ops.push_back(&op);
    calls.streams.push_back(streamOf(op));
  }
}

void CudaExecutor::end(std::span<const core::Op> ops) {
  if (peerWork_) runPeers(ops);
  // Nothing of the call is kept past it (the ops are the caller's).
  ringCalls_.plans.clear();
  ringCalls_.ops.clear();
  ringCalls_.streams.clear();
  nextRingCall_ = 0;
  peerWork_ = false;
  // The C++ API's calls: the host waits for the device (core::Op).
  if (std::any_of(ops.begin(), ops.end(), [](const core::Op& op) { return op.completeOnReturn; })) {
    cudaCheck(cudaStreamSynchronize(static_cast<cudaStream_t>(ownStream())),
              "waiting for the communicator's stream (cudaStreamSynchronize)");
    if (auto failed = failure()) throw *failed;
  }
}

void CudaExecutor::run(std::span<const core::Op> ops) {
  DeviceScope scope(ctx_.device);
  begin(ops);
  while (nextCollective() != kNoRingLaunch) launchNext();
  end(ops);
}

}  // namespace hora::device
