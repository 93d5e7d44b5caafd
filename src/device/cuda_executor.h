// The CUDA executor: collectives on device buffers, enqueued as ring kernels
// on the caller's stream. A call returns once its kernel is enqueued; the
// host never waits for the GPU inside a call, so calls can be captured in
// CUDA graphs and overlap the program's own kernels.
//
// Each rank owns, per channel, the two FIFOs its previous ring neighbour
// sends into (protocols/: a Simple one, and an LL one for small
// operations). The ranks exchange them at set-up. They live in this rank's
// GPU memory where every peer of its host reaches that memory directly (the
// same GPU, or peer access): a rank of the same process takes the pointer,
// a rank of another process opens it through a CUDA IPC handle. Otherwise
// (GPUs without peer access, or NCCL_P2P_DISABLE: gpu_offer.h decides) they
// live in pinned host memory, an anonymous shared-memory file that peers
// in other processes open as the host transport's FIFOs are opened
// (transport/shm/shm_segment.h), and every GPU maps over PCIe.
// A ring neighbour on another host is reached through pinned host memory
// and a proxy thread (transport/proxy/): the kernels send into, or receive
// from, FIFOs in host memory this GPU maps, and the proxy carries their
// slots over a connection of the host transports (TCP, ib, ofi) to the
// neighbour's proxy. Such a ring uses only the Simple protocol (the relays
// carry Simple slots); a proxy that fails raises the rank's abort flags,
// and failure() reports its error.
//
// Every kernel polls a host-mapped abort flag and a deadline (HORA_TIMEOUT)
// in each wait, and records why it stopped in a host-mapped failure record
// that failure() reads without synchronising. Each FIFO's waits poll the
// flag of the peer at its other end; abort() raises all of them. The
// processes of the other ranks on this host are watched (base/
// process_watch.h): when one exits, its flag is raised, so a kernel waiting
// for it stops at once instead of at its deadline, and the error names the
// rank that exited.
//
// Ranks of one process that share a GPU share its hardware queues too:
// CUDA spreads a context's streams over a few queues, and a queue holds a
// kernel back while the kernel before it on the same stream runs. If a
// rank's thread runs ahead of a peer's, its next kernel can stand in a
// shared queue in front of the peer's current one, which its own current
// kernel waits for: neither can go on (seen on an H100 with 4 ranks as
// threads, each launching on its own stream, even with 32 queues). So such
// a rank launches its next kernel only once every kernel its last one can
// wait for has started (launch_order.h): after a collective, the same
// collective's kernels of the process's other ranks on the GPU (each ring
// kernel stores its collective's number into host-mapped memory as it
// starts, start_words.h); after point-to-point work, its own last kernel
// (each kernel stores its launch number as it ends).
// HORA_DEVICE_MAX_QUEUED chooses another rule. Only a call's first kernel
// waits (run() says why). Calls captured into graphs launch nothing and
// are not counted.
//
// Plain C++: the CUDA types stay in cuda_executor.cc.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/process_watch.h"
#include "bootstrap/bootstrap.h"
#include "core/executor.h"
#include "device/device_memory.h"
#include "device/device_plan.h"
#include "device/gpu_offer.h"
#include "device/launch_order.h"
#include "device/start_words.h"
#include "hora/error.h"
#include "transport/connector.h"
#include "transport/proxy/network_proxy.h"
#include "transport/shm/shm_segment.h"

namespace hora::device {

struct CudaExecutorContext {
  int rank;
  int nranks;
  std::vector<int> ringRanks;  // user ranks in ring order
  std::uint64_t hostHash;      // equal on ranks of one host
  int device;                  // this rank's CUDA device
  std::chrono::milliseconds timeout;
  bootstrap::Bootstrap& bootstrap;  // outlives the executor
  // Makes connections to the other ranks over the host transports, for the
  // network proxy. Collective: the executor calls it on every rank or on
  // none (when the ring crosses hosts). Null: device buffers do not cross
  // hosts.
  std::function<std::unique_ptr<transport::Connector>()> networkConnector;
};

class CudaExecutor final : public core::Executor {
 public:
  // Collective over every rank (all-gathers through the bootstrap):
  // allocates this rank's FIFOs and opens every peer's (the ring uses the
  // next rank's; point-to-point work all of them).
  CudaExecutor(CudaExecutorContext context, const Deadline& deadline);
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  // Refuses what cannot run here: kinds without a device schedule, device
  // collectives this communicator cannot run, point-to-point work the
  // kernel cannot run (planPeerLaunch says what), and the legacy default
  // stream where ranks of this process share the GPU.
  void check(std::span<const core::Op> ops) const override;
  // Enqueues every op on its stream: ring kernels for the collectives (one
  // launch per run of up to DeviceRingLaunch::kMaxCollectives that share a
  // kernel and a stream), and one point-to-point kernel for all of the
  // sends and receives.
  void run(std::span<const core::Op> ops) override;
  // run() in steps, for a thread that makes the calls of several ranks of
  // its GPU at once (core::Communicator::executeOnDevices): begin() plans
  // the call and makes its copies; nextCollective() is the number of the
  // first collective of the next ring launch (kNoRingLaunch: none left),
  // launchNext() makes that launch; end() launches the point-to-point
  // kernel and, for the C++ API's calls, waits for the stream. The thread
  // makes the ranks' ring launches in the order launch_order.h gives
  // (nextLaunchOf). Every launch waits for its turn (admitKernel). The
  // steps run on the current device: the caller makes it this
  // communicator's (DeviceScope), as run() does once for all of them.
  void begin(std::span<const core::Op> ops);
  std::uint64_t nextCollective() const;
  void launchNext();
  void end(std::span<const core::Op> ops);
  // Between begin() and end(): whether a ring kernel of the call has been
  // launched.
  bool launchedInCall() const { return nextRingCall_ > 0; }
  // Raises every flag the waits of this rank's kernels poll, naming
  // `origin` (this rank where -1): they end, and pass the stop on.
  void abort(int origin = -1) override;
  // What a kernel of this rank recorded when it stopped, as the error the
  // communicator reports (naming the peer), or nullopt. Cheap: one load of
  // host-mapped memory.
  std::optional<Error> failure() const override;

 private:
  void exchangeFifos(const Deadline& deadline);
  // The relays between the FIFOs in host memory and connections to the
  // ring neighbours on other hosts (-1: that neighbour is on this host).
  // Collective: every rank of a ring that crosses hosts calls it.
  struct NetworkRelays {
    std::unique_ptr<transport::proxy::FifoSendRelay> send;
    std::unique_ptr<transport::proxy::FifoRecvRelay> recv;
  };
  NetworkRelays connectNetwork(int channels, std::uint64_t stride, int sendPeer, int recvPeer);
  // How data for `peer` on another host travels, for the log: the
  // transport, and how device data reaches it (transport/rdma/gpu_direct.h).
  std::string networkPath(int peer) const;
  // The proxy stopped on `error`: the first cause, then every wait stops.
  void proxyFailed(const Error& error);
  // Watches the processes of `peers` (rank and pid; other processes of this
  // host, same pid namespace): each that exits raises its abort flag.
  void watchPeerProcesses(std::vector<ProcessWatch::Watched> peers);
  // The group's sends and receives (ops of peer kinds) in one launch, and
  // the copies of its sends to this rank.
  void runPeers(std::span<const core::Op> ops);
  // Where `op` runs: the caller's stream, or the communicator's own for
  // the C++ API's calls without one (core::Op::completeOnReturn).
  void* streamOf(const core::Op& op) const;
  // The stream of the first op of a peer kind (all must share it).
  void* peerStream(std::span<const core::Op> ops) const;
  // Raises this rank's abort flags (all, or only the one for onlyPeer),
  // each naming `origin`, the rank whose failure it stands for, which the
  // kernels that stop pass on (device_work.h). Host-mapped stores: safe
  // from any thread.
  void raiseAbortFlags(int origin, int onlyPeer = -1);
  // Frees what was allocated (the destructor, and a constructor that throws).
  void release();
  // The launch rule of a rank whose GPU another rank of its process uses,
  // and those ranks' start words (launch_order.h), from every rank's offer.
  void chooseLaunchRule(const std::vector<GpuOffer>& gpus, const GpuOffer& mine);
  // The collectives of the call run() is making that need a ring kernel,
  // in the group's order: each one's plan, op and stream. Kept between
  // calls so that a call allocates nothing (one calling thread at a time).
  struct RingCalls {
    std::vector<DeviceLaunchPlan> plans;
    std::vector<const core::Op*> ops;
    std::vector<const void*> streams;
  };
  RingCalls ringCalls_;
  // The first of ringCalls_ not launched yet (launchNext takes several per
  // launch where they share a kernel and a stream: device_plan.h,
  // ringLaunchSize), and whether the call has point-to-point work.
  std::size_t nextRingCall_ = 0;
  bool peerWork_ = false;
  // Collectives launched in ring kernels, counted alike on every rank: the
  // numbers nextCollective() gives.
  std::uint64_t ringCollectivesLaunched_ = 0;
  // Before a kernel launch on `stream` (a ring kernel of `collectives`
  // collectives; 0 for point-to-point work), `capturing` where the stream
  // is being captured into a graph (nothing is counted then):
  // waits until launchRule_ lets this rank launch (the header says why),
  // then gives the launch its numbers; 0 where nothing is counted. Throws
  // the rank's failure, an abort, or a timeout naming what it waited for.
  QueuedKernels admitKernel(int collectives, bool capturing);
  // Why admitKernel has waited longer than HORA_TIMEOUT (launch_order.h).
  [[noreturn]] void launchWaitTimedOut(const LaunchWait& wait) const;
  // Every kernel of this communicator uses the same FIFOs, so none may
  // start before the one launched before it has ended. Launches on one
  // stream are ordered by it; a launch on another stream than the last
  // first makes its stream wait for the last launch (an event recorded
  // after every launch). Launches being captured into a graph are left
  // out of both (the .cc says why, and what that leaves to the program).
  // A launch's stream, asked about once per launch.
  struct LaunchStream {
    void* handle;            // cudaStream_t
    bool capturing;          // being captured into a graph
    unsigned long long id;   // CUDA's stream id; 0 while capturing (never compared then)
  };
  static LaunchStream launchStream(void* stream);
  void orderAfterLastLaunch(const LaunchStream& stream);
  void launched(const LaunchStream& stream);
  // The stream of the last launch outside a capture, by CUDA's stream id,
  // which no other stream of the process gets (a handle may be reused once
  // the program destroys its stream).
  unsigned long long lastStreamId_ = 0;
  bool anyLaunch_ = false;
  void* lastLaunch_ = nullptr;  // cudaEvent_t, recorded after every launch outside a capture

  CudaExecutorContext ctx_;
  DeviceShape shape_;
  std::string unusable_;  // why device collectives cannot run here (empty: they can)
  bool gpuSharedInProcess_ = false;  // another rank of this process uses this GPU
  // Some rank of the communicator shares its GPU with another rank of its
  // process: every rank refuses the legacy default stream (check()), so
  // that none launches what another refuses.
  bool legacyStreamRefused_ = false;
  std::uint64_t timeoutNs_;
  // The most collectives of a group one ring kernel launch runs
  // (HORA_DEVICE_COLLECTIVES_PER_LAUNCH; 1: a launch per collective).
  int collectivesPerLaunch_ = DeviceRingLaunch::kMaxCollectives;
  void* fifos_ = nullptr;           // this rank's receive FIFOs, as its GPU addresses them
  // Those FIFOs when they are in pinned host memory (registered with CUDA);
  // empty when they are in device memory.
  transport::ShmSegment hostFifos_;
  // Peers' FIFOs in pinned host memory, opened from their processes and
  // registered with CUDA here.
  std::vector<transport::ShmSegment> peerHostFifos_;
  // Pinned host memory the GPU maps, per channel a Simple FIFO: what this
  // rank's kernels send to a next rank on another host, and receive from a
  // previous one there (null where that neighbour is on this host).
  void* sendStage_ = nullptr;
  void* recvStage_ = nullptr;
  std::unique_ptr<transport::Connector> networkConnector_;  // outlives proxy_
  std::unique_ptr<transport::proxy::NetworkProxy> proxy_;
  std::atomic<bool> proxyFailed_{false};  // proxyError_ is set
  mutable std::mutex proxyErrorMutex_;
  std::optional<Error> proxyError_;
  std::vector<void*> peerMappings_;  // peers' FIFOs opened by CUDA IPC
  DeviceChannel* peerChannels_ = nullptr;  // per rank, for point-to-point work (device memory)
  std::string peersUnusable_;  // why point-to-point work on device buffers cannot run here (empty: it can)
  void* ring_ = nullptr;            // the DeviceRing (device memory)
  int* ringRanksDevice_ = nullptr;  // its ranks (device memory)
  // The communicator's own stream, made at its first use: a stream made
  // for every communicator would take one of the few hardware queues CUDA
  // spreads streams over (gpu.md, "Ranks of one process on one GPU").
  void* ownStream() const;
  mutable void* ownStream_ = nullptr;  // cudaStream_t for the C++ API's calls (non-blocking)
  mutable std::mutex ownStreamMutex_;
  std::uint32_t* stopped_ = nullptr;  // device memory: nonzero once a kernel of this rank failed (device_work.h)
  // Device memory, in stopped_'s allocation: the blocks of the running
  // launch that have ended (QueuedKernels).
  std::uint32_t* blocksEnded_ = nullptr;
  void* mapped_ = nullptr;                // host-mapped: the failure record and the abort flags
  DeviceFailure* failure_ = nullptr;      // in mapped_
  std::uint32_t* abortFlags_ = nullptr;   // in mapped_, one per peer rank
  DeviceFailure* failureOnDevice_ = nullptr;  // the same, as kernels address it
  std::unique_ptr<ProcessWatch> watch_;        // stopped before abortFlags_ are freed
  // Per peer rank: the pid of its process once it exited (0 while it runs,
  // or when abort() came first and is the cause).
  std::unique_ptr<std::atomic<pid_t>[]> gonePids_;
  std::atomic<bool> aborted_{false};  // abort() was called
  // How launches wait (launch_order.h); None where no other rank of this
  // process shares the GPU.
  LaunchRule launchRule_ = LaunchRule::None;
  std::uint64_t maxUnfinished_ = 0;       // for LaunchRule::Unfinished
  LaunchCount launches_;
  std::uint64_t* kernelsDone_ = nullptr;  // in mapped_: the number of the last kernel that ended
  std::uint64_t* kernelsDoneOnDevice_ = nullptr;
  StartWord startWord_;  // where this rank's ring kernels record the collectives they started
  // The other ranks of this process on this GPU, and their start words.
  std::vector<int> gpuPeersInProcess_;
  std::vector<const std::uint64_t*> gpuPeerStartWords_;
  std::vector<std::uint64_t> gpuPeersStarted_;  // what admitKernel last read there
};

}  // namespace hora::device
