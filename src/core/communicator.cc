#include "core/communicator.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>

#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "base/socket.h"
#include "core/agreed_settings.h"
#include "core/buffer_layout.h"
#include "core/scalar.h"
#include "core/self_messages.h"
#include "hora_config.h"
#if HORA_HAVE_CUDA
#include "device/cuda_executor.h"
#include "device/device_memory.h"
#endif
#include "topology/cpu_affinity.h"
#include "transport/rdma/device.h"
#include "transport/rdma/network_devices.h"
#include "transport/shm/shm_layout.h"

namespace hora::core {

const char* opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::AllReduce: return "AllReduce";
    case OpKind::ReduceScatter: return "ReduceScatter";
    case OpKind::AllGather: return "AllGather";
    case OpKind::Broadcast: return "Broadcast";
    case OpKind::Reduce: return "Reduce";
    case OpKind::AllToAll: return "AllToAll";
    case OpKind::Gather: return "Gather";
    case OpKind::Scatter: return "Scatter";
    case OpKind::Send: return "Send";
    case OpKind::Recv: return "Recv";
  }
  return "?";
}

namespace {
// How long a rank that lost a peer waits for that peer's notice of why
// (transport/connector.h): a notice from a rank of this host is there
// before its connections close; one from another host needs a round trip.
// A peer that died sends none, and its loss is reported this much later.
constexpr std::chrono::milliseconds kNoticeGrace{500};

// The machine is described once per process: loading it (hwloc with I/O
// devices, or a file) costs milliseconds, and it does not change.
const topology::System& processSystem() {
  static std::once_flag once;
  static std::unique_ptr<topology::System> system;
  std::call_once(once, [] { system = std::make_unique<topology::System>(topology::loadSystem()); });
  return *system;
}

// RankPlacement on the wire (fixed size).
struct PlacementRecord {
  std::int32_t rank;
  std::uint8_t hasInfiniband;
  std::uint8_t hasOfi;
  std::uint8_t ibLinkLayer;
  std::uint64_t ibSubnet;
  std::uint64_t hostHash;
  std::uint64_t fingerprint;
  char gpuBusId[32];
  // The CPUs the creating thread may run on (wait_mode.h).
  std::array<std::uint64_t, 16> cpuMask;
  AgreedSettings settings;  // must be alike on every rank
};
}  // namespace

Communicator::Communicator(const bootstrap::UniqueId& id, int nranks, int rank,
                           const CommunicatorConfig& config)
    : rank_(rank),
      nranks_(nranks),
      timeout_(config.timeout.count() > 0 ? config.timeout : env::defaultTimeout()),
      abortFlag_(config.abortFlag ? config.abortFlag : std::make_shared<std::atomic<bool>>(false)),
      abort_(*abortFlag_),
      tuning_(Tuning::fromEnvironment()) {
  device_ = config.device == CommunicatorConfig::kCallingThreadDevice ? callingThreadDevice() : config.device;
  HORA_CHECK_ARG(nranks > 0, "nranks must be positive, got ", nranks);
  HORA_CHECK_ARG(rank >= 0 && rank < nranks, "rank ", rank, " is outside [0, ", nranks, ")");
  log::ScopedThreadRank logRank(rank);
  Deadline deadline = Deadline::after(timeout_);
  bootstrap_ = std::make_unique<bootstrap::Bootstrap>(id, rank, nranks, config.hostRoot, deadline,
                                                      &abort_);
  deadline = bootstrap_->joinDeadline();
  // From here every rank knows every other: one that fails tells them why.
  try {
    connectAll(id, deadline);
  } catch (const Error& error) {
    throw firstCause(error);
  }
  HORA_LOG(Info, "communicator ready: rank ", rank, " of ", nranks, ", chunk ", tuning_.chunkBytes,
           " B, timeout ", timeout_.count(), " ms");
}

std::size_t Communicator::rdmaSliceFloor(topology::TransportKind next, std::size_t sliceBytes) const {
  // A rank posts what it sends to the next rank a slice at a time (from
  // its staging slots), and an RDMA connection sends each post in a
  // granted slot of its own: with small slices the credit slots and the
  // staging together hold little, and a ring whose steps (the chunk) do
  // not fit in what its connections hold at once can leave every rank
  // waiting for a staging slot (as with HORA_SLICE_SIZE=4K over ofi, 3
  // ranks). So towards an RDMA peer the slice is at least what makes the
  // credit slots alone hold two chunks, or a whole slot where that is less
  // (a chunk above 512 KiB with the default geometry: the staging slots
  // then hold the rest). A bound found by measurement, not proved; a rank
  // whose previous rank is over shared memory forwards pieces of that
  // FIFO's slots, whatever its own slice.
  if (next != topology::TransportKind::Ib && next != topology::TransportKind::Ofi) return sliceBytes;
  const std::shared_ptr<transport::rdma::Device> device = transport::rdma::currentDevice(next);
  if (!device) return sliceBytes;
  const transport::rdma::CreditGeometry geometry = device->geometry();
  const std::size_t chunk = tuning_.chunkBytes;  // capped already (connectAll)
  // A power of two, so that shared-memory slots still divide it.
  const std::size_t floor = std::min(geometry.slotBytes, std::bit_ceil((2 * chunk + geometry.slots - 1) / geometry.slots));
  if (sliceBytes >= floor) return sliceBytes;
  HORA_LOG(Info, "rank ", rank_, ": slice ", sliceBytes, " B raised to ", floor, " B towards ",
           topology::transportName(next), " (", geometry.slots, " slots of ", geometry.slotBytes,
           " B, to carry two steps of ", chunk, " B where a slot allows)");
  return floor;
}

void Communicator::connectAll(const bootstrap::UniqueId& id, const Deadline& deadline) {
  const int rank = rank_, nranks = nranks_;
  bootstrap_->connectRing(deadline);
  transport::ConnectorOptions connectorOptions;
  connectorOptions.timeout = timeout_;
  const topology::System& system = processSystem();
  std::vector<CpuMask> cpuMasks;
  std::vector<AgreedSettings> settings;
  auto placements = gatherPlacements(system, deadline, cpuMasks, settings);
  waitMode_ = decideWaitMode(placements, cpuMasks);
  // Ranks that share CPUs take turns on them (ranksShareCpus: the same
  // answer on every rank, which the FIFO size needs: the chunk is capped by
  // it below, and all ranks must cut buffers alike).
  std::vector<std::uint64_t> hostOf;
  for (const auto& placement : placements) hostOf.push_back(placement.hostHash);
  const bool sharedCpus = ranksShareCpus(hostOf, cpuMasks);
  checkSettingsAgree(settings, rank, sharedCpus);
  const bool fifoSizeSet = tuning_.shmFifoBytes != 0;  // HORA_SHM_FIFO_SIZE
  tuning_.fitToSharedCpus(sharedCpus);
  if (sharedCpus)
    HORA_LOG(Info, "rank ", rank, ": ranks share CPUs: shared-memory FIFOs of ", tuning_.shmFifoBytes, " B (",
             fifoSizeSet ? "HORA_SHM_FIFO_SIZE" : "small, to stay in cache while ranks take turns",
             "), and reductions write outputs of ", tuning_.reductionStreamingMinBytes, " B and more around the cache",
             tuning_.streamingMinSet ? " (HORA_STREAMING_MIN)" : "");
  connectorOptions.shm.fifoBytes = tuning_.shmFifoBytes;
  connectorOptions.shm.wakeSleepers = sharedCpus;
  const auto kinds = chooseTransports(placements, system);
  threadCpus_ = threadCpusNearDevice(system, placements);
  bool usesShm = false;
  for (int p = 0; p < nranks; ++p)
    if (p != rank && kinds[p] == topology::TransportKind::Shm) usesShm = true;
  peersShareMemory_ = true;
  for (int p = 0; p < nranks; ++p)
    if (p != rank && !transport::findTransport(kinds[p])->sharesHostMemory) peersShareMemory_ = false;
  // The ring: hosts contiguous, devices by locality (the same on every rank).
  std::vector<int> ringRanks = topology::ringOrder(placements, &system);
  HORA_ENFORCE(static_cast<int>(ringRanks.size()) == nranks, "ring of ", ringRanks.size(),
               " ranks for ", nranks);
  int ringPos = 0;
  for (int p = 0; p < nranks; ++p)
    if (ringRanks[p] == rank) ringPos = p;
  const int nextRank = ringRanks[(ringPos + 1) % nranks];
  const int previousRank = ringRanks[(ringPos + nranks - 1) % nranks];
  // Reductions in place wait for room in the next rank's shared-memory FIFO
  // before they take data from the previous one. A rank's sends lead its
  // receives by at most one ring step, so while a step takes at most half a
  // FIFO's slots the FIFOs of a ring cannot all be full at once, and such
  // waits always end. Every rank caps the same way, whatever its own
  // transports, so that all ranks cut buffers into the same steps.
  //
  // Counting slots (shm_layout.h: an even number of slots of S bytes, half
  // of them holding at least half a FIFO): every post and commit starts a
  // fresh slot, so a step of B bytes takes ceil(B / S) slots as long as all
  // its slots but the last are full. They are: the step starts in a fresh
  // slot; posted buffers are cut into whole slots; and a reduction in place
  // takes min(slice, the rest of its input slot, a free slot) at a time,
  // where the slice is a whole number of slots (rounded above) and, by the
  // same argument one rank back, the input's slots are full but for the
  // step's last, so each piece it commits ends where a slot does, or with
  // the step. With B <= half a FIFO, ceil(B / S) <= slots / 2. (A reduction
  // also never holds a partly read input slot while it waits for room: each
  // piece reads its input slot to the end.)
  tuning_.chunkBytes = std::min(tuning_.chunkBytes, tuning_.shmFifoBytes / 2);
  std::size_t sliceBytes =
      tuning_.sliceBytes != 0 ? tuning_.sliceBytes
      : nranks > 1 && kinds[nextRank] == topology::TransportKind::Tcp ? Tuning::kTcpSliceBytes
                                                                      : Tuning::kShmSliceBytes;
  if (nranks > 1) sliceBytes = rdmaSliceFloor(kinds[nextRank], sliceBytes);
  // Shared-memory FIFOs come in slots that the slice is a whole number of
  // (see the chunk's cap above); the default slices already are.
  const std::size_t slotBytes = transport::shmGeometry(tuning_.shmFifoBytes, sliceBytes).slotBytes;
  if (usesShm) sliceBytes = sliceBytes / slotBytes * slotBytes;
  connectorOptions.shm.sliceBytes = sliceBytes;
  connectorOptions.userRegistrations = userRegistrations_;
  connector_ = std::make_unique<transport::Connector>(*bootstrap_, id.magic, &abort_, kinds,
                                                      connectorOptions);
  // Collectives that only move data take larger steps (as large as the cap
  // allows): over shared memory they are single copies, one system call per
  // step.
  const std::size_t moveChunkBytes = std::max(tuning_.chunkBytes, tuning_.shmFifoBytes / 2);
  std::vector<std::uint8_t> readsPrevious(nranks, 0);
  if (nranks > 1) {
    connector_->sendTo(nextRank, /*busy=*/true);  // the ring carries most bytes
    readsPrevious[rank] = connector_->recvFrom(previousRank).readsPeerMemory();
    std::string order;
    for (int r : ringRanks) order += strCat(order.empty() ? "" : " -> ", r);
    HORA_LOG(Info, "ring: ", order, " -> ", ringRanks[0], "; to the next rank via ",
             topology::transportName(connector_->kindOf(nextRank)));
  }
  // Whether every rank may read its previous rank's memory: then single-copy
  // all-gathers take whole blocks per step (all ranks must cut alike). This
  // all-gather is also the barrier that ends init.
  bootstrap_->allGather(readsPrevious.data(), 1, deadline);
  const bool singleCopyRing =
      nranks > 1 && std::all_of(readsPrevious.begin(), readsPrevious.end(),
                                [](std::uint8_t reads) { return reads != 0; });
  // The CUDA executor's proxy to ring neighbours on other hosts gets
  // connections of its own, of the same transports: the host executor's
  // carry its own operations' bytes.
  auto networkConnector = [this, magic = id.magic, kinds, connectorOptions] {
    return std::make_unique<transport::Connector>(*bootstrap_, magic, &abort_, kinds, connectorOptions);
  };
  startCudaExecutor(ringRanks, placements[static_cast<std::size_t>(rank)].hostHash, deadline, networkConnector);
  executor_ = std::make_unique<HostExecutor>(
      HostExecutorContext{rank, nranks, *bootstrap_, *connector_, windows_, std::move(ringRanks),
                          singleCopyRing, waitPolicy(), tuning_.checkAgreement},
      tuning_, moveChunkBytes, sliceBytes);
  HORA_LOG(Info, "rank ", rank, ": slice ", sliceBytes, " B");
}

int Communicator::callingThreadDevice() {
#if HORA_HAVE_CUDA
  return device::currentDevice();
#else
  return -1;
#endif
}

int Communicator::cudaDeviceCount() {
#if HORA_HAVE_CUDA
  return device::deviceCount();
#else
  return 0;
#endif
}

void Communicator::startCudaExecutor(const std::vector<int>& ringRanks, std::uint64_t hostHash,
                                     const Deadline& deadline,
                                     std::function<std::unique_ptr<transport::Connector>()> networkConnector) {
#if HORA_HAVE_CUDA
  // Only where every rank has a device: the executor's set-up is collective.
  std::vector<std::int32_t> devices(static_cast<std::size_t>(nranks_));
  devices[static_cast<std::size_t>(rank_)] = device_;
  bootstrap_->allGather(devices.data(), sizeof(std::int32_t), deadline);
  const int without = static_cast<int>(std::count(devices.begin(), devices.end(), -1));
  if (without != 0) {
    if (without != nranks_)
      HORA_LOG(Info, "rank ", rank_, ": ", without, " rank(s) have no CUDA device, so collectives on device "
               "buffers are not available on this communicator");
    return;
  }
  cudaExecutor_ = std::make_unique<device::CudaExecutor>(
      device::CudaExecutorContext{rank_, nranks_, ringRanks, hostHash, device_, timeout_, *bootstrap_,
                                  std::move(networkConnector)},
      deadline);
#else
  (void)ringRanks, (void)hostHash, (void)deadline, (void)networkConnector;
#endif
}

topology::TransportKind Communicator::transportTo(int peer) const {
  HORA_CHECK_ARG(peer >= 0 && peer < nranks_ && peer != rank_, "rank ", rank_, ": no connection with rank ", peer);
  return connector_->kindOf(peer);
}

std::optional<Error> Communicator::deviceFailure() const {
  return cudaExecutor_ ? cudaExecutor_->failure() : std::nullopt;
}

Communicator::~Communicator() {
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    stopping_ = true;
  }
  queueCv_.notify_all();
  joinWorker();
}

void Communicator::joinWorker() {
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    if (worker_.get_id() == std::this_thread::get_id()) return;  // the worker never waits for itself
  }
  // Whichever thread joins first, the others wait for it: a program may
  // destroy the communicator as soon as any of their calls returns.
  std::lock_guard<std::mutex> joining(workerJoinMutex_);
  std::thread worker;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    worker = std::move(worker_);
  }
  if (worker.joinable()) worker.join();
}


std::optional<int> Communicator::gpuInTopology(const topology::System& system) const {
#if HORA_HAVE_CUDA
  if (device_ < 0) return std::nullopt;
  const std::string busId = device::pciBusIdOf(device_);
  const std::optional<int> gpu = busId.empty() ? std::nullopt : system.findGpu(busId);
  if (!gpu)
    HORA_LOG(Info, "rank ", rank_, ": CUDA device ", device_, " (bus id '", busId,
             "') is not in the topology; RDMA NICs are ranked by this rank's CPUs");
  return gpu;
#else
  (void)system;
  return std::nullopt;
#endif
}

std::vector<topology::RankPlacement> Communicator::gatherPlacements(const topology::System& system,
                                                                    const Deadline& deadline,
                                                                    std::vector<CpuMask>& cpuMasks,
                                                                    std::vector<AgreedSettings>& settings) {
  topology::RankPlacement mine =
      topology::localPlacement(rank_, bootstrap_->peers()[rank_].hostHash, "", system);
  // A rank whose process has an RDMA device in use (transport/rdma/device.h)
  // takes part in the ib (or ofi) transport.
  const auto& peers = bootstrap_->peers();
  const bool spansHosts = std::any_of(peers.begin(), peers.end(),
                                      [&](const auto& peer) { return peer.hostHash != peers[rank_].hostHash; });
  transport::rdma::RankNetworkView view;
  view.spansHosts = spansHosts;
  view.interfaceName = bootstrap_->interfaceName();
  // The NICs nearest the rank's GPU where it has one the topology knows
  // (its device buffers' traffic, staged in host memory near it, leaves
  // there; NCCL chooses alike), else nearest the CPUs it runs on.
  const std::vector<int> cpus = topology::currentCpus();
  gpuInTopology_ = gpuInTopology(system);
  view.nicsNearest = topology::rdmaNicsNearest(system, gpuInTopology_, cpus);
  view.railsNearest = topology::rdmaRailsNearest(system, gpuInTopology_, cpus);
  transport::rdma::prepareNetworkDevices(topology::TransportPolicy::fromEnvironment(), view);
  // What this rank can use, not what hwloc saw: ranks must agree on the
  // transport of each pair, and one whose NIC failed to open cannot use it.
  if (auto ib = transport::rdma::currentDevice(topology::TransportKind::Ib)) {
    mine.hasInfiniband = true;
    mine.ibLinkLayer = ib->linkLayer();
    mine.ibSubnet = ib->subnet();
  } else {
    mine.hasInfiniband = false;
  }
  mine.hasOfi = transport::rdma::currentDevice(topology::TransportKind::Ofi) != nullptr;
  std::vector<PlacementRecord> records(nranks_);
  PlacementRecord& own = records[rank_];
  own.rank = rank_;
  own.hasInfiniband = mine.hasInfiniband;
  own.hasOfi = mine.hasOfi;
  own.ibLinkLayer = static_cast<std::uint8_t>(mine.ibLinkLayer);
  own.ibSubnet = mine.ibSubnet;
  own.hostHash = mine.hostHash;
  own.fingerprint = mine.topologyFingerprint;
  std::snprintf(own.gpuBusId, sizeof(own.gpuBusId), "%s", mine.gpuBusId.c_str());
  own.cpuMask = CpuMask::ofThisThread().words;
  own.settings = agreedSettingsOf(tuning_);
  bootstrap_->allGather(records.data(), sizeof(PlacementRecord), deadline);
  std::vector<topology::RankPlacement> all(nranks_);
  cpuMasks.assign(nranks_, CpuMask{});
  for (int r = 0; r < nranks_; ++r) {
    all[r] = {records[r].rank, records[r].hostHash, records[r].gpuBusId,
              records[r].hasInfiniband != 0, records[r].hasOfi != 0,
              static_cast<topology::RankPlacement::LinkLayer>(records[r].ibLinkLayer), records[r].ibSubnet,
              records[r].fingerprint};
    cpuMasks[r].words = records[r].cpuMask;
    settings.push_back(records[r].settings);
  }
  return all;
}

std::optional<std::vector<int>> Communicator::threadCpusNearDevice(
    const topology::System& system, const std::vector<topology::RankPlacement>& placements) const {
  // The device this rank's data goes through: its GPU, else the NIC that
  // carries its traffic to ranks on other hosts.
  std::optional<int> device = gpuInTopology_;
  const bool otherHosts = std::any_of(placements.begin(), placements.end(), [&](const auto& p) {
    return p.hostHash != placements[rank_].hostHash;
  });
  if (!device && otherHosts) device = system.findNicByInterface(bootstrap_->interfaceName());
  if (!device) return std::nullopt;
  const topology::Device& d = system.devices()[static_cast<std::size_t>(*device)];
  auto cpus = topology::affinityNear(topology::currentCpus(), system.cpusNear(*device));
  if (cpus)
    HORA_LOG(Info, "rank ", rank_, ": hora's threads keep to CPUs ", topology::formatCpuList(*cpus),
             " (NUMA node ", d.numaNode, ", nearest ", d.name, ")");
  else
    HORA_LOG(Info, "rank ", rank_, ": ", d.name, " is on NUMA node ", d.numaNode,
             "; the CPUs this rank may use are left as they are");
  return cpus;
}

WaitMode Communicator::decideWaitMode(const std::vector<topology::RankPlacement>& placements,
                                      const std::vector<CpuMask>& cpuMasks) const {
  if (tuning_.waitMode != WaitModeSetting::Auto) {
    const WaitMode forced = tuning_.waitMode == WaitModeSetting::Spin ? WaitMode::Spin : WaitMode::Yield;
    HORA_LOG(Info, "rank ", rank_, " waits by ", waitModeName(forced), " (HORA_WAIT)");
    return forced;
  }
  std::vector<CpuMask> sameHost;
  for (int r = 0; r < nranks_; ++r)
    if (placements[r].hostHash == placements[rank_].hostHash) sameHost.push_back(cpuMasks[r]);
  std::string why;
  const WaitMode mode = chooseWaitMode(sameHost, cpuMasks[rank_], &why);
  HORA_LOG(Info, "rank ", rank_, " waits by ", waitModeName(mode), ": ", why);
  return mode;
}

std::vector<topology::TransportKind> Communicator::chooseTransports(
    const std::vector<topology::RankPlacement>& placements, const topology::System& system) const {
  const auto policy = topology::TransportPolicy::fromEnvironment();
  std::vector<topology::TransportKind> kinds(nranks_, topology::TransportKind::Tcp);
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    const auto choice = topology::chooseTransport(placements[rank_], placements[p], system, policy);
    kinds[p] = transport::carrierOf(choice.kind);
    if (kinds[p] != choice.kind) {
      HORA_LOG(Info, "rank ", rank_, " <-> rank ", p, ": ", topology::transportName(choice.kind),
               " is not available; ", topology::transportName(kinds[p]), " carries the pair");
    }
    HORA_LOG(Info, "rank ", rank_, " <-> rank ", p, ": ", topology::transportName(kinds[p]), " (",
             choice.reason, ")");
  }
  return kinds;
}

WaitPolicy Communicator::waitPolicy() const {
  return WaitPolicy{timeout_, tuning_.spin, &abort_, rank_, waitMode_};
}

namespace {
// "rank 2: no progress ..." -> "no progress ...": a cause retold by another
// rank already says whose it was.
std::string withoutRankPrefix(const std::string& text, int rank) {
  const std::string prefix = strCat("rank ", rank, ": ");
  return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text;
}
}  // namespace

Error Communicator::firstCause(const Error& failure) {
  if (nranks_ == 1) return failure;
  // Told why by another rank: passed on to this rank's ring neighbours,
  // which may see this rank close before the teller's notice reaches them.
  const auto told = [&](const bootstrap::PeerNotice& notice) -> Error {
    bootstrap_->passOn(notice);
    return notice;
  };
  if (const auto* notice = dynamic_cast<const bootstrap::PeerNotice*>(&failure)) return told(*notice);
  if (failure.kind() == ErrorKind::InvalidUsage) {
    // The program misused the communicator (ranks that disagree on a call,
    // core/agreement.h): every rank must stop, and should say why.
    bootstrap_->announce(failure);
    return failure;
  }
  if (failure.kind() != ErrorKind::Remote) {
    // This rank failed by itself (a system call, a bug): it is the first.
    const Error finding(failure.kind(),
                        strCat(bootstrap_->describe(rank_), " failed first: ", withoutRankPrefix(failure.what(), rank_)),
                        rank_);
    bootstrap_->announce(finding);
    return Error(failure.kind(), failure.what(), rank_);
  }
  // A peer closed, vanished or went silent. If another rank has stopped
  // already, its notice (sent before it closed) says why.
  if (auto notice = bootstrap_->noticeWithin(std::chrono::milliseconds(0))) return told(*notice);
  int culprit = failure.failedRank();
  // Sure: the peer blamed is gone, or some peer is gone or stopped (ranks
  // that time out together each blame the one they wait on; a stopped
  // process of this host is the one they all wait for in the end).
  bool sure = culprit >= 0 && culprit != rank_ && bootstrap_->peerGone(culprit);
  if (!sure) {
    if (const int found = findFailedPeer(); found >= 0) {
      culprit = found;
      sure = true;
    }
  }
  // A peer that is alive closed because it stopped: its notice is on its
  // way. One that is gone says nothing more.
  if (!sure) {
    if (auto notice = bootstrap_->noticeWithin(kNoticeGrace)) return told(*notice);
    // A process that was killed closes its sockets a moment before it is
    // seen gone: look again, at the peer this rank's failure names first.
    const bool namedIsGone = culprit >= 0 && culprit != rank_ && bootstrap_->peerGone(culprit);
    const int found = namedIsGone ? culprit : findFailedPeer();
    // Another survivor that waited as long may have exited since, and be
    // the one found gone; but it told this rank why before it exited, so
    // its notice is here by now, and names the first cause.
    if (auto notice = bootstrap_->noticeWithin(std::chrono::milliseconds(0))) return told(*notice);
    if (found >= 0) culprit = found;
  }
  if (culprit < 0) {
    bootstrap_->announce(Error(failure.kind(), withoutRankPrefix(failure.what(), rank_), rank_));
    return failure;
  }
  // Blamed, yet alive: say so, or its user looks for a crash that never
  // happened. A peer that closed its connections without a notice (an
  // abort sends one) finalized or destroyed its communicator; one that
  // went silent was late, blocked, or in another call.
  std::string alive;
  if (!sure && bootstrap_->peerRunning(culprit))
    alive = std::string_view(failure.what()).find(kPeerClosedCause) != std::string_view::npos
                ? strCat("; rank ", culprit, "'s process is still running: its program closed the communicator ",
                         "(ncclCommFinalize or ncclCommDestroy) while this rank still waited for it in a call")
                : strCat("; rank ", culprit, "'s process is still running, so it was late, blocked or in another ",
                         "call, not dead");
  const Error finding(
      ErrorKind::Remote,
      strCat(bootstrap_->describe(culprit), " failed first: ", withoutRankPrefix(failure.what(), rank_), alive),
      culprit);
  bootstrap_->announce(finding);
  return Error(ErrorKind::Remote, strCat("rank ", rank_, ": ", finding.what()), culprit);
}

int Communicator::findFailedPeer() {
  // Stopped processes of this host first (a look at /proc each), then gone
  // ones, nearest ranks first: in a ring they are the likeliest.
  for (int step = 1; step < nranks_; ++step)
    for (int peer : {(rank_ + step) % nranks_, (rank_ + nranks_ - step) % nranks_})
      if (bootstrap_->peerStopped(peer)) return peer;
  for (int step = 1; step < nranks_; ++step)
    for (int peer : {(rank_ + step) % nranks_, (rank_ + nranks_ - step) % nranks_})
      if (bootstrap_->peerGone(peer)) return peer;
  return -1;
}

void Communicator::checkUsable() const {
  if (abort_.load()) {
    std::lock_guard<std::mutex> lock(stateMutex_);
    fail(ErrorKind::InvalidUsage, "rank ", rank_, ": the communicator was ",
         revocation_ != Revocation::None ? "revoked (ncclCommRevoke); it can only be shrunk or destroyed" : "aborted");
  }
  if (closedToWork_.load(std::memory_order_acquire))
    fail(ErrorKind::InvalidUsage, "rank ", rank_,
         ": the communicator was finalized (ncclCommFinalize); only ncclCommDestroy may follow");
  checkNotBroken();
}

void Communicator::checkNotBroken() const {
  if (!broken_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(stateMutex_);
  if (!brokenReason_.empty())
    throw Error(brokenKind_,
                strCat("rank ", rank_, ": the communicator is unusable after an earlier error: ", brokenReason_),
                brokenRank_);
}

Communicator::ExecutionClaim Communicator::claimExecution(const char* what) {
  for (;;) {
    if (tryHoldExecution(Executing::Call)) return ExecutionClaim(&executing_);
    const Executing now = executing_.load(std::memory_order_relaxed);
    if (now == Executing::Call) break;
    if (now == Executing::Housekeeping) std::this_thread::yield();  // it ends soon
  }
  Error error(ErrorKind::InvalidUsage,
              strCat("rank ", rank_, ": ", what, " while another thread of this process was running a call on "
                     "the same communicator; calls on one communicator must come from one thread at a time "
                     "(the ranks could otherwise pair different calls), so the communicator is now unusable "
                     "on every rank"));
  failBroken(error);
}

Communicator::ExecutionClaim Communicator::awaitExecution() {
  // A call still running ends (the communicator is broken or revoked, or
  // it completes); shrinking is rare, so a millisecond's sleep is no cost.
  while (!tryHoldExecution(Executing::Call))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return ExecutionClaim(&executing_);
}

void Communicator::failBroken(const Error& failure) {
  // ncclCommAbort shuts the connections down to end the waits, so a call
  // under way may see a closed socket before it sees the abort flag: that
  // is this rank's abort, not a peer's failure.
  const bool told = abort_.load() || broken_.load(std::memory_order_acquire);  // by an earlier failure
  Error error = abort_.load() ? Error(ErrorKind::InvalidUsage,
                                      strCat("rank ", rank_, ": communicator aborted (ncclCommAbort) during the call"),
                                      rank_)
                : told ? failure
                       : firstCause(failure);
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (brokenReason_.empty()) {
      brokenReason_ = error.what();
      brokenKind_ = error.kind();
      brokenRank_ = error.failedRank();
      broken_.store(true, std::memory_order_release);
    }
  }
  // Close our connections so that peers waiting on us fail now rather than
  // at their deadline; stop this rank's kernels.
  connector_->shutdown();
  if (cudaExecutor_) cudaExecutor_->abort(error.failedRank());
  throw error;
}

std::string Communicator::brokenReason() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return brokenReason_;
}

ErrorKind Communicator::brokenKind() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return brokenKind_;
}

int Communicator::brokenRank() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return brokenRank_;
}

void Communicator::checkBuffers(const Op& op) const {
  checkBufferAlignment(op, rank_, nranks_);
  checkBufferOverlap(op, rank_, nranks_);
}

void Communicator::execute(std::span<const Op> ops, MemoryKind memory) {
  checkUsable();
  checkSelfMessagesPair(ops, rank_);
  // Keep submission order: behind asynchronous work still queued.
  if (queuedTasks_.load(std::memory_order_acquire) != 0) {
    submit(std::vector<Op>(ops.begin(), ops.end()), memory)->wait();
    return;
  }
  auto lock = claimExecution("a collective or point-to-point call came");
  log::ScopedThreadRank logRank(rank_);
  try {
    runOps(ops, memory);
  } catch (const Error& error) {
    failBroken(error);
  }
}

bool Communicator::meetsOverHostConnections() const {
  // Whether a CUDA executor runs is agreed at init (it needs a device on
  // every rank); a rank's own device is not (ranks may lack one).
  return nranks_ > 1 && !cudaExecutor_;
}

void Communicator::meetForCall(OpPurpose purpose) {
  if (tuning_.checkAgreement && meetsOverHostConnections()) runMeeting(purpose);
}

void Communicator::runMeeting(OpPurpose purpose) {
  std::int32_t one = 1, sum = 0;
  Op op = makeOp(OpKind::AllReduce, &one, &sum, 1, DataType::Int32);
  op.purpose = purpose;
  execute(op);
}

void Communicator::executeOnDevices(std::span<const DevicePart> parts) {
#if HORA_HAVE_CUDA
  // Work queued for a part's worker thread runs first, as execute() would
  // run after it (not in turn through execute(): every launch waits for
  // its turn, and a part's second launch would wait for a launch of a
  // later part that this thread had yet to make).
  for (const DevicePart& part : parts)
    if (part.comm->queuedTasks_.load(std::memory_order_acquire) != 0) part.comm->submit({})->wait();
  for (const DevicePart& part : parts) {
    part.comm->checkUsable();
    checkSelfMessagesPair(part.ops, part.comm->rank_);
  }
  std::vector<ExecutionClaim> claims;
  claims.reserve(parts.size());
  for (const DevicePart& part : parts)
    claims.push_back(part.comm->claimExecution("a collective or point-to-point call came"));
  auto executor = [&](std::size_t i) -> device::CudaExecutor& {
    return static_cast<device::CudaExecutor&>(*parts[i].comm->cudaExecutor_);
  };
  // Each step as execute() runs a call: under the rank's name in the log,
  // a failure breaking its communicator.
  std::size_t current = 0;
  auto step = [&](std::size_t i, auto&& action) {
    current = i;
    Communicator& comm = *parts[i].comm;
    log::ScopedThreadRank logRank(comm.rank_);
    try {
      device::DeviceScope scope(comm.device_);
      action(executor(i));
    } catch (const Error& error) {
      comm.failBroken(error);
    }
  };
  std::size_t begun = 0, ended = 0;
  try {
    for (; begun < parts.size(); ++begun) step(begun, [&](device::CudaExecutor& e) { e.begin(parts[begun].ops); });
    std::vector<std::uint64_t> next(parts.size());
    for (;;) {
      for (std::size_t i = 0; i < parts.size(); ++i) next[i] = executor(i).nextCollective();
      const std::size_t i = device::nextLaunchOf(next);
      if (i == parts.size()) break;
      step(i, [](device::CudaExecutor& e) { e.launchNext(); });
    }
    for (; ended < parts.size(); ++ended) step(ended, [&](device::CudaExecutor& e) { e.end(parts[ended].ops); });
  } catch (const Error& cause) {
    // The other parts that launched some of their kernels and not the rest
    // leave their peers waiting for the rest: they are broken too, naming
    // what ended the group.
    for (std::size_t i = ended; i < begun; ++i) {
      if (i == current || !executor(i).launchedInCall()) continue;
      Communicator& comm = *parts[i].comm;
      try {
        comm.failBroken(Error(cause.kind(),
                              strCat("rank ", comm.rank_, ": its part of a group was left half launched when ",
                                     "the group failed on another communicator: ", cause.what())));
      } catch (const Error&) {
      }
    }
    throw;
  }
#else
  for (const DevicePart& part : parts) part.comm->execute(part.ops, MemoryKind::Device);
#endif
}

std::shared_ptr<WorkState> Communicator::submit(std::vector<Op> ops, MemoryKind memory) {
  checkUsable();
  // Refused here, before it is queued, so that the call fails alone (as
  // execute() refuses it) instead of breaking the communicator on the worker.
  checkSelfMessagesPair(ops, rank_);
  for (Op& op : ops) op.memory = memory;
  auto work = std::make_shared<WorkState>();
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    queue_.push_back({std::move(ops), work});
    queuedTasks_.store(queue_.size(), std::memory_order_release);
    if (!worker_.joinable()) worker_ = std::thread([this] { workerLoop(); });
  }
  queueCv_.notify_one();
  return work;
}

void Communicator::workerLoop() {
  log::setThreadRank(rank_);
  if (threadCpus_) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : *threadCpus_)
      if (cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    if (::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set) != 0)
      HORA_LOG(Warn, "rank ", rank_, ": cannot keep the worker thread on CPUs ",
               topology::formatCpuList(*threadCpus_));
  }
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(queueMutex_);
      queueCv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
    }
    std::exception_ptr error;
    try {
      auto lock = claimExecution("queued work started");
      checkUsable();
      try {
        runOps(task.ops, task.ops.empty() ? MemoryKind::Host : task.ops.front().memory);
      } catch (const Error& e) {
        failBroken(e);
      }
    } catch (...) {
      error = std::current_exception();
    }
    {
      // Pop only after running, so execute() sees the queue busy meanwhile.
      std::lock_guard<std::mutex> lock(queueMutex_);
      queue_.pop_front();
      queuedTasks_.store(queue_.size(), std::memory_order_release);
    }
    task.work->complete(error);
  }
}

void Communicator::finalize() {
  // As NCCL: a revoked communicator's operations were stopped, not drained.
  if (revocation() != Revocation::None)
    fail(ErrorKind::InvalidArgument, "rank ", rank_, ": the communicator was revoked; destroy it instead");
  bool idle;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    idle = queue_.empty();
  }
  if (!idle) submit({})->wait();
}

void Communicator::closeToWork() {
  closedToWork_.store(true, std::memory_order_release);
  // Every call that starts from now on sees the flag (checkUsable, on the
  // caller's thread and on the worker before each task) and touches no
  // connection; one that started before it (another thread's, which is
  // the program's error) is waited for.
  auto hold = awaitExecution();
  if (connector_) connector_->close();
}

void Communicator::barrier() {
  checkUsable();
  // Over the connections where host collectives run: a rank that meets it
  // with another call fails at once (and it takes microseconds where the
  // bootstrap ring takes a TCP round trip per rank).
  if (meetsOverHostConnections()) return runMeeting(OpPurpose::Barrier);
  auto lock = claimExecution("a barrier came");
  try {
    bootstrap_->barrier(Deadline::after(timeout_));
  } catch (const Error& error) {
    failBroken(error);
  }
}

void Communicator::abort() {
  abandoned_.store(true);
  stopEverything();
}

void Communicator::stopEverything() {
  // Told first: a peer that loses this rank's connections then reports the
  // abort as the cause, not a closed connection.
  abort_.store(true);
  const bool first = !abortTold_.exchange(true) && !broken_.load(std::memory_order_acquire);
  if (first && nranks_ > 1)
    bootstrap_->announce(Error(ErrorKind::Remote,
                               strCat(bootstrap_->describe(rank_),
                                      " failed first: its program aborted the communicator (ncclCommAbort or "
                                      "ncclCommRevoke)"),
                               rank_));
  if (connector_) connector_->shutdown();
  if (cudaExecutor_) cudaExecutor_->abort();
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    stopping_ = true;
  }
  queueCv_.notify_all();
  joinWorker();
  // Whatever was still queued fails.
  std::lock_guard<std::mutex> lock(queueMutex_);
  for (auto& task : queue_)
    task.work->complete(std::make_exception_ptr(
        Error(ErrorKind::InvalidUsage, strCat("rank ", rank_, ": the communicator was aborted"), rank_)));
  queue_.clear();
}

int Communicator::nextRedOpTag() {
  // Tags in [1, 2^14): handles stay far from INT_MAX, and the communicators
  // a process holds at once get tags of their own (it would take 16,383
  // communicators made in between for two to share one).
  static std::atomic<unsigned> made{0};
  return static_cast<int>(made.fetch_add(1) % ((1u << 14) - 1)) + 1;
}

int Communicator::createPreMulSum(DataType type, std::uint64_t scalarBits, const void* scalarAt) {
  std::lock_guard<std::mutex> lock(stateMutex_);
  // The lowest free handle, as NCCL reuses them: PyTorch makes and destroys
  // one per PREMUL_SUM collective, so counting up would run out of ints.
  const int first = kFirstCustomOp + redOpTag_ * kRedOpsPerTag;
  int handle = first;
  for (const auto& [used, spec] : customOps_) {  // in ascending order
    if (used != handle) break;
    ++handle;
  }
  if (handle - first >= kRedOpsPerTag)
    fail(ErrorKind::InvalidUsage, "rank ", rank_, ": ", kRedOpsPerTag,
         " PreMulSum reduction ops are live on this communicator; destroy some (ncclRedOpDestroy) first");
  customOps_[handle] = kernels::ReduceSpec{type, kernels::ReduceKind::PreMulSum, scalarBits, scalarAt};
  return handle;
}

void Communicator::destroyRedOp(int handle) {
  std::lock_guard<std::mutex> lock(stateMutex_);
  if (customOps_.erase(handle) == 0)
    fail(ErrorKind::InvalidArgument, "reduction op ", handle,
         " was not created by ncclRedOpCreatePreMulSum on this communicator (or was destroyed)");
}

kernels::ReduceSpec Communicator::reduceSpecFor(int op, DataType type) const {
  using kernels::ReduceKind;
  switch (op) {
    case 0: return {type, ReduceKind::Sum, 0};
    case 1: return {type, ReduceKind::Prod, 0};
    case 2: return {type, ReduceKind::Max, 0};
    case 3: return {type, ReduceKind::Min, 0};
    case 4:
      if (isFloatingType(type)) return {type, ReduceKind::PreMulSum, scalarBits(type, 1.0 / nranks_)};
      return {type, ReduceKind::SumPostDiv, static_cast<std::uint64_t>(nranks_)};
    default: break;
  }
  std::lock_guard<std::mutex> lock(stateMutex_);
  auto found = customOps_.find(op);
  if (found == customOps_.end())
    fail(ErrorKind::InvalidArgument, "invalid reduction op ", op,
         " (not a built-in op, nor a live ncclRedOpCreatePreMulSum handle of this communicator)");
  if (found->second.type != type)
    fail(ErrorKind::InvalidArgument, "reduction op ", op, " was created for ",
         dataTypeName(found->second.type), " but is used with ", dataTypeName(type));
  return found->second;
}

// ---------------------------------------------------------------- execution

MemoryKind Communicator::memoryOf(std::span<const Op> ops) const {
#if HORA_HAVE_CUDA
  if (device_ < 0 || ops.empty()) return MemoryKind::Host;
  int onDevice = 0, onHost = 0;
  for (const Op& op : ops) {
    // What a rank other than the root passes for a buffer it does not use
    // (a broadcast's send, a reduce's receive) does not count, as NCCL
    // ignores it.
    const bool rootOnlySend = op.kind == OpKind::Broadcast && op.root != rank_;
    const bool rootOnlyRecv = op.kind == OpKind::Reduce && op.root != rank_;
    const void* send = rootOnlySend ? nullptr : op.send;
    const void* recv = rootOnlyRecv ? nullptr : op.recv;
    for (const void* buffer : {send, recv})
      if (buffer != nullptr) ++(device::isDeviceMemory(buffer) ? onDevice : onHost);
  }
  if (onDevice != 0 && onHost != 0)
    fail(ErrorKind::InvalidArgument, "rank ", rank_, ": ", opKindName(ops.front().kind),
         ops.size() > 1 ? " (in a group)" : "",
         " mixes host and device buffers; a call (or a group) takes one or the other");
  return onDevice != 0 ? MemoryKind::Device : MemoryKind::Host;
#else
  (void)ops;
  return MemoryKind::Host;
#endif
}

MemoryKind Communicator::checkedMemoryOf(std::span<const Op> ops) const {
  for (const Op& op : ops) checkBuffers(op);
  const MemoryKind memory = memoryOf(ops);
  if (memory != MemoryKind::Device) return memory;
  if (!cudaExecutor_)
    fail(ErrorKind::InvalidUsage, "rank ", rank_, ": ", opKindName(ops.front().kind),
         " on device buffers needs every rank of the communicator to have a CUDA device");
  cudaExecutor_->check(ops);
  return memory;
}

void Communicator::runOps(std::span<const Op> ops, MemoryKind memory) {
  if (memory == MemoryKind::Device) return cudaExecutor_->run(ops);  // checkedMemoryOf made sure there is one
  if (std::none_of(ops.begin(), ops.end(), [](const Op& op) { return op.reduce.scalarAt != nullptr; }))
    return executor_->run(ops);
  // A PreMulSum scalar left in memory (ncclScalarDevice) is read as the
  // operation starts: host work has no stream to order the read after (in
  // device memory, it is read by a synchronous copy, docs/gpu.md). An
  // operation with nothing to reduce reads nothing.
  std::vector<Op> withScalars(ops.begin(), ops.end());
  for (Op& op : withScalars) {
    if (op.reduce.scalarAt == nullptr) continue;
    op.reduce.scalarBits = 0;
    if (op.count != 0) readScalar(&op.reduce.scalarBits, op.reduce.scalarAt, dataTypeSize(op.reduce.type));
    op.reduce.scalarAt = nullptr;
  }
  executor_->run(withScalars);
}

}  // namespace hora::core
