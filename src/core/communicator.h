// A communicator: one rank's membership in a group of ranks. It owns the
// lifecycle (bootstrap, transports, the ring, windows), the error state and
// abort, and hands lists of operations (a single call or a group) to its
// executor, either on the calling thread or, for asynchronous use, on its own
// worker thread, strictly in submission order.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "core/host_executor.h"
#include "core/op.h"
#include "core/tuning.h"
#include "core/windows.h"
#include "core/work.h"
#include "topology/topology.h"
#include "transport/connector.h"
#include "transport/user_registrations.h"

namespace hora::core {

struct AgreedSettings;

struct CommunicatorConfig {
  std::chrono::milliseconds timeout{0};  // 0: HORA_TIMEOUT
  bool hostRoot = false;                 // this rank (0) hosts the rendezvous root
  // The CUDA device the communicator is bound to (ncclCommCuDevice), where
  // device buffers' collectives run; -1: none. kCallingThreadDevice: the
  // one current on the thread that constructs the communicator.
  static constexpr int kCallingThreadDevice = -2;
  int device = kCallingThreadDevice;
  // Set from another thread, it stops the construction's waits with an
  // error (ncclCommAbort of a non-blocking init), and stays the
  // communicator's abort flag. None: a flag of its own.
  std::shared_ptr<std::atomic<bool>> abortFlag;
};

// What a split or a shrink agreed for this rank: the new communicator's
// rendezvous, its size and this rank's place in it, and what it takes
// from its parent (so that making it needs the parent no more).
struct ChildPlan {
  bootstrap::UniqueId id;
  int nranks;
  int rank;
  std::chrono::milliseconds timeout;
  int device;  // the parent's CUDA device, as in NCCL
};

class Communicator : public std::enable_shared_from_this<Communicator> {
 public:
  // Collective over all ranks: joins the rendezvous and connects the ring.
  Communicator(const bootstrap::UniqueId& id, int nranks, int rank, const CommunicatorConfig& config);
  ~Communicator();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  // The CUDA device this communicator is bound to, -1 if none.
  int cudaDevice() const { return device_; }
  // The current CUDA device of the calling thread; -1 where this build or
  // this machine has no CUDA device.
  static int callingThreadDevice();
  // CUDA devices this process sees (0 without CUDA).
  static int cudaDeviceCount();
  // What a kernel of this rank reported when it stopped (device buffers'
  // collectives run asynchronously, so their failures surface here and at
  // the next call), or nullopt. Cheap enough to poll.
  std::optional<Error> deviceFailure() const;
  std::chrono::milliseconds timeout() const { return timeout_; }
  const bootstrap::Bootstrap& bootstrap() const { return *bootstrap_; }
  // The transport chosen, at init, for this rank's connections with `peer`.
  topology::TransportKind transportTo(int peer) const;

  // Runs `ops` (one call, or one group's calls on this communicator) on the
  // calling thread, after anything already submitted. Throws on failure; a
  // failure leaves the communicator broken (every later call fails with the
  // first error, as NCCL's async error).
  void execute(std::span<const Op> ops) { execute(ops, checkedMemoryOf(ops)); }
  void execute(const Op& op) { execute(std::span<const Op>(&op, 1)); }
  // Queues `ops` for the worker thread; the Work completes when they ran.
  std::shared_ptr<WorkState> submit(std::vector<Op> ops) {
    const MemoryKind memory = checkedMemoryOf(ops);
    return submit(std::move(ops), memory);
  }
  // Where `ops`' buffers are (device buffers run as kernels on their
  // streams: executing them returns without waiting for any peer), with the
  // checks that fail a call before it runs, leaving the communicator usable:
  // checkBuffers, host and device buffers mixed, and what the CUDA executor
  // refuses.
  MemoryKind checkedMemoryOf(std::span<const Op> ops) const;
  // Refuses buffers not aligned to their elements, and send and receive
  // buffers that overlap other than in place (InvalidArgument).
  // checkedMemoryOf runs it; nccl.h runs it at a call inside a group,
  // which is queued until ncclGroupEnd.
  void checkBuffers(const Op& op) const;
  // Throws what makes this communicator refuse work: an abort, a
  // revocation, or an earlier failure.
  void checkUsable() const;
  // Throws the earlier failure that broke this communicator, if one did.
  void checkNotBroken() const;
  // execute and submit for `ops` whose checkedMemoryOf is `memory`.
  void execute(std::span<const Op> ops, MemoryKind memory);
  // A group's calls on device buffers over several communicators, made by
  // this thread: as execute() for each, but with the ring launches of all
  // of them in the order of their collectives' numbers, each waiting for
  // its turn (device/launch_order.h, nextLaunchOf: ranks of one process
  // that share a GPU and are driven by one thread then never queue a
  // kernel in front of one it waits for). The failure of one breaks that
  // communicator and ends the group there; the others that had launched
  // some of their kernels and not the rest are broken too (their peers
  // would wait for the rest), those that had launched nothing are not.
  struct DevicePart {
    Communicator* comm;
    std::span<const Op> ops;
  };
  static void executeOnDevices(std::span<const DevicePart> parts);
  std::shared_ptr<WorkState> submit(std::vector<Op> ops, MemoryKind memory);

  void barrier();
  // ncclCommSplit, collective over every rank of this communicator (after
  // any submitted work): ranks giving the same colour form a new
  // communicator, ranked by key, then by their rank here. A negative colour
  // (NCCL_SPLIT_NOCOLOR) takes part and gets nullptr. The new communicator
  // has its own rendezvous and connections: it does not depend on this one
  // afterwards. (core/split.cc)
  std::shared_ptr<Communicator> split(int color, int key);
  // A split in its two parts: the exchange over this communicator (ranks
  // agree who joins which new one; nullopt for NCCL_SPLIT_NOCOLOR), then
  // the new communicator's init, which needs this one no more. A
  // non-blocking split (nccl.h) reports each part's end separately.
  std::optional<ChildPlan> planSplit(int color, int key);
  // Joins the communicator `plan` describes; `abortFlag` as
  // CommunicatorConfig's.
  static std::shared_ptr<Communicator> makeChild(const ChildPlan& plan,
                                                 std::shared_ptr<std::atomic<bool>> abortFlag = nullptr);
  // ncclCommShrink: collective over the ranks not in `excluded` (they must
  // all give the same list), which form a new communicator, ranked in their
  // order here. Works on a communicator broken by a rank's failure: it
  // needs neither the excluded ranks nor this communicator's connections.
  // `abortFirst` (NCCL_SHRINK_ABORT) stops this rank's operations in flight
  // first; otherwise they finish (or fail) first. (core/shrink.cc)
  std::shared_ptr<Communicator> shrink(const std::vector<int>& excluded, bool abortFirst);
  // The shrink's first part (the remaining ranks meet and agree), as planSplit.
  ChildPlan planShrink(const std::vector<int>& excluded, bool abortFirst);
  // The list sorted, or InvalidArgument for a rank outside the
  // communicator, one named twice, or this rank itself.
  std::vector<int> checkExclusion(const std::vector<int>& excluded) const;
  // ncclCommRevoke: stops every operation in flight and refuses new ones,
  // telling the other ranks (as abort() does); the communicator can still be
  // shrunk.
  void revoke();
  // Whether revoke() was called, and whether it has stopped everything yet.
  enum class Revocation { None, Stopping, Done };
  Revocation revocation() const;
  // Waits for all submitted work (ncclCommFinalize, and before a split,
  // a shrink or a window registration).
  void finalize();
  // ncclCommFinalize's end: from now on new work is refused at once
  // (InvalidUsage): the peers finalized too and would never pair with it.
  // The connections close, so that a peer still waiting for this rank (in
  // a call it will never make) learns it within a second, not at its
  // deadline.
  void closeToWork();
  // ncclCommAbort: stops everything now (in-flight and later operations
  // fail, peers see this rank's connections close), a shrink's meeting too.
  void abort();
  bool aborted() const { return abort_.load(); }

  // The first error that broke this communicator, empty if none.
  std::string brokenReason() const;
  ErrorKind brokenKind() const;
  // The rank that error blames (Error::failedRank), -1 if none.
  int brokenRank() const;

  // ncclCommWindowRegister: collective, called by every rank in the same
  // order (after any submitted work); each rank's buffer may have a size of
  // its own. Returns the window's number. Collectives whose buffers lie in
  // windows on every rank move data between the ranks' buffers directly
  // where the ranks share a host (core/zero_copy.cc); elsewhere a window
  // changes nothing. ncclCommWindowDeregister is local, as in NCCL, and
  // works on a communicator that failed or was stopped too.
  int registerWindow(void* buffer, std::size_t bytes);
  void deregisterWindow(int window);

  // ncclCommRegister / Deregister (local, not collective): a buffer that
  // RDMA connections send from without a copy, registered with their NICs
  // on first use (transport/user_registrations.h). Returns its id.
  std::uint64_t registerBuffer(const void* buffer, std::size_t bytes) {
    return userRegistrations_->add(buffer, bytes);
  }
  void deregisterBuffer(std::uint64_t id);

  // How many collectives ran on windows without FIFOs (for tests and logs).
  std::uint64_t zeroCopyCollectives() const { return executor_->windowCollectives(); }

  // PreMulSum handles (ncclRedOpCreatePreMulSum): >= ncclNumOps, and
  // this communicator's only.
  // The scalar comes by value (`scalarBits`), or, where `scalarAt` is not
  // null (ncclScalarDevice), stays in memory and is read each time an
  // operation with the handle runs.
  int createPreMulSum(DataType type, std::uint64_t scalarBits, const void* scalarAt = nullptr);
  void destroyRedOp(int handle);
  // The element-wise reduction of a built-in op or handle, for `type`.
  kernels::ReduceSpec reduceSpecFor(int op, DataType type) const;

 private:
  // Opens a call made over the bootstrap ring (a split, a window
  // registration) with a one-element all-reduce stamped as that call
  // (OpPurpose, op.h): a rank that meets it with a collective of its own
  // fails at once with the agreement check's error, as does this rank.
  // With the check off, on one rank, or where the CUDA executor runs
  // (whose collectives on device buffers carry no stamps), nothing is run.
  void meetForCall(OpPurpose purpose);
  // That all-reduce, run (a barrier too: no rank has the sum before every
  // rank gave its part).
  void runMeeting(OpPurpose purpose);
  // Whether the ranks meet in that all-reduce at all: more than one rank,
  // and no CUDA executor (whose presence every rank agrees on).
  bool meetsOverHostConnections() const;
  // Runs `ops` on the executor for their buffers' `memory`.
  void runOps(std::span<const Op> ops, MemoryKind memory);
  // Where `ops`' buffers are; throws for host and device buffers mixed.
  MemoryKind memoryOf(std::span<const Op> ops) const;
  // With CUDA and a device on every rank: the CUDA executor (collective).
  // `networkConnector`: makes connections of the host transports for the
  // executor's network proxy (collective; device/cuda_executor.h).
  void startCudaExecutor(const std::vector<int>& ringRanks, std::uint64_t hostHash, const Deadline& deadline,
                         std::function<std::unique_ptr<transport::Connector>()> networkConnector);
  // Init after the rendezvous: the ring, placements, transports.
  void connectAll(const bootstrap::UniqueId& id, const Deadline& deadline);
  // What this rank reports for `failure`, and what it tells the others
  // (bootstrap/control.h): a notice that came first is the cause; otherwise
  // the rank that failed first, found from the error, or by looking for a
  // peer that has gone or is stopped, is named in it (Error::failedRank) and told to every
  // rank. May wait up to kNoticeGrace for a peer's notice.
  Error firstCause(const Error& failure);
  // A peer whose process is stopped or gone, or -1.
  int findFailedPeer();
  // Keeps the first error (the abort, if this rank was aborted), closes the
  // connections so peers fail at once, and throws it.
  [[noreturn]] void failBroken(const Error& error);
  WaitPolicy waitPolicy() const;
  // This rank's CUDA device among the topology's GPUs (by PCI bus id);
  // none without one, or where the topology does not list it.
  std::optional<int> gpuInTopology(const topology::System& system) const;
  // Placement, CPUs and agreed settings (agreed_settings.h) of every rank
  // (all-gathered), then transport per peer, the ring and how to wait.
  std::vector<topology::RankPlacement> gatherPlacements(const topology::System& system,
                                                        const Deadline& deadline,
                                                        std::vector<CpuMask>& cpuMasks,
                                                        std::vector<AgreedSettings>& settings);
  // The CPUs hora's own threads keep to: those of the NUMA node of this
  // rank's GPU or NIC, where that narrows the current mask
  // (topology/cpu_affinity.h); nullopt leaves them alone.
  std::optional<std::vector<int>> threadCpusNearDevice(
      const topology::System& system, const std::vector<topology::RankPlacement>& placements) const;
  WaitMode decideWaitMode(const std::vector<topology::RankPlacement>& placements,
                          const std::vector<CpuMask>& cpuMasks) const;
  // The slice this rank uses when its next rank is over `next`: raised
  // where an RDMA connection's slots would carry too little (see .cc).
  std::size_t rdmaSliceFloor(topology::TransportKind next, std::size_t sliceBytes) const;
  std::vector<topology::TransportKind> chooseTransports(
      const std::vector<topology::RankPlacement>& placements, const topology::System& system) const;
  void workerLoop();
  int rank_;
  int nranks_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<std::atomic<bool>> abortFlag_;  // CommunicatorConfig::abortFlag, or its own
  std::atomic<bool>& abort_;                        // *abortFlag_
  Revocation revocation_ = Revocation::None;  // under stateMutex_
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  std::unique_ptr<transport::Connector> connector_;
  Tuning tuning_;
  WaitMode waitMode_ = WaitMode::Spin;
  std::optional<std::vector<int>> threadCpus_;
  std::optional<int> gpuInTopology_;  // gpuInTopology(), found once at init
  WindowTable windows_;
  std::shared_ptr<transport::UserRegistrations> userRegistrations_ =
      std::make_shared<transport::UserRegistrations>();
  std::map<int, std::uint64_t> windowRegistrations_;  // window -> its id in userRegistrations_
  // Drops a window's entry in userRegistrations_; whether it had one.
  bool forgetWindowRegistration(int window);
  bool peersShareMemory_ = false;  // every other rank is on this host, through shm
  std::unique_ptr<HostExecutor> executor_;
  int device_ = -1;
  std::unique_ptr<Executor> cudaExecutor_;  // device buffers' collectives (with CUDA)

  // Execution: the calling thread or the worker, one at a time. Two
  // threads of the program calling into one communicator at once is the
  // program's error (NCCL leaves it undefined): the ranks could run their
  // calls in different orders and pair different collectives. claimExecution
  // refuses the second caller and breaks the communicator on every rank.
  // A flag, not a mutex: claiming it is one atomic compare-exchange and
  // letting it go one store, on the path of every call. Housekeeping (the
  // release of a deregistered buffer's NIC registrations) holds it too,
  // briefly, without being a call: a call that finds it waits instead of
  // failing, so a program that deregisters from another thread breaks
  // nothing.
  enum class Executing : std::uint8_t { No, Call, Housekeeping };
  class ExecutionClaim {
   public:
    explicit ExecutionClaim(std::atomic<Executing>* flag) : flag_(flag) {}
    ExecutionClaim(ExecutionClaim&& other) noexcept : flag_(std::exchange(other.flag_, nullptr)) {}
    ExecutionClaim& operator=(ExecutionClaim&&) = delete;
    ~ExecutionClaim() {
      if (flag_ != nullptr) flag_->store(Executing::No, std::memory_order_release);
    }

   private:
    std::atomic<Executing>* flag_;
  };
  std::atomic<Executing> executing_{Executing::No};
  // Holds execution for `as`; false (and nothing held) if it is held.
  bool tryHoldExecution(Executing as) {
    Executing expected = Executing::No;
    return executing_.compare_exchange_strong(expected, as, std::memory_order_acquire);
  }
  ExecutionClaim claimExecution(const char* what);
  // Waits until no call runs, then holds execution (ncclCommShrink).
  ExecutionClaim awaitExecution();
  // abort() and revoke()'s part: operations stop, the other ranks are told.
  void stopEverything();
  // Waits for the worker thread to end; safe from several threads at once
  // (two aborts), each returning once it has ended.
  void joinWorker();

  // Worker for asynchronous operations.
  struct Task {
    std::vector<Op> ops;
    std::shared_ptr<WorkState> work;
  };
  std::mutex queueMutex_;
  std::condition_variable queueCv_;
  std::deque<Task> queue_;
  // queue_.size(), stored under queueMutex_: what a blocking call looks at
  // (without the lock, which would cost every small call two atomic
  // operations) to decide whether it must queue behind earlier work.
  std::atomic<std::size_t> queuedTasks_{0};
  bool stopping_ = false;
  std::thread worker_;  // under queueMutex_
  std::mutex workerJoinMutex_;  // held while worker_ is joined

  mutable std::mutex stateMutex_;
  // Set once brokenReason_ is: lets checkUsable skip the mutex on every call.
  std::atomic<bool> broken_{false};
  std::string brokenReason_;
  ErrorKind brokenKind_ = ErrorKind::Internal;
  int brokenRank_ = -1;
  std::atomic<bool> closedToWork_{false};  // closeToWork()
  // abort() has told the other ranks. Not abort_ itself: that flag may be
  // the one that stopped this communicator's init (ncclCommAbort raises it
  // before it aborts the communicator the init made), and the ranks must
  // still be told why this rank's connections close.
  std::atomic<bool> abortTold_{false};
  // The program aborted this communicator (ncclCommAbort): raised by
  // abort() only, not by a revoke, whose communicator a shrink goes on to
  // use. It ends a shrink's meeting with the other ranks (planShrink).
  std::atomic<bool> abandoned_{false};
  std::map<int, kernels::ReduceSpec> customOps_;
  // A PreMulSum handle is kFirstCustomOp + tag * kRedOpsPerTag + index: the
  // index is the lowest free one (handles are reused), the tag this
  // communicator's, so that a handle of another communicator is refused
  // here instead of naming this one's op at the same index (NCCL mangles
  // its handles with the communicator for the same reason).
  static constexpr int kFirstCustomOp = 5;  // ncclNumOps
  static constexpr int kRedOpsPerTag = 1 << 16;
  const int redOpTag_ = nextRedOpTag();
  static int nextRedOpTag();
};

}  // namespace hora::core
