#include "core/communicator.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "algorithms/ring.h"
#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "core/scalar.h"

namespace hora::core {

namespace {
// Elements per ring step and loop. Large enough to amortise per-step costs,
// small enough that the ring's pipeline fills quickly (HORA_CHUNK_SIZE).
constexpr std::size_t kDefaultChunkBytes = 512 << 10;
// Staging slices: received, reduced and forwarded while still in cache.
// Over shared memory a slice should stay in cache; over TCP fewer, larger
// socket calls win (measured on loopback: 512K beats 128K by ~15%).
constexpr std::size_t kDefaultShmSliceBytes = 128 << 10;
constexpr std::size_t kDefaultTcpSliceBytes = 512 << 10;
constexpr int kStagingSlots = 16;
// All-reduces of at most this many bytes use the direct algorithm: every
// rank sends its input to every other rank at once and reduces locally, one
// message latency instead of the ring's 2(n-1) (HORA_DIRECT_MAX_BYTES).
constexpr std::size_t kDefaultDirectMaxBytes = 16 << 10;
constexpr int kDirectMaxRanks = 16;
constexpr std::size_t kStreamAlignment = 64;
// Outputs this large are written with non-temporal stores (HORA_STREAMING_MIN).
constexpr std::size_t kDefaultStreamingMinBytes = 8 << 20;
// All-gathers with outputs in [min, max) copy once where they may
// (HORA_SHM_SINGLE_COPY_MIN/MAX; communicator.h says why only there).
constexpr std::size_t kDefaultSingleCopyMinBytes = 1 << 20;
constexpr std::size_t kDefaultSingleCopyMaxBytes = 64 << 20;
// Collectives on windows whose larger buffer has at least this many bytes
// skip the FIFOs (HORA_ZERO_COPY_MIN).
constexpr std::size_t kDefaultZeroCopyMinBytes = 64 << 10;

std::size_t sliceBytes(transport::TransportKind next) {
  std::size_t value = env::getBytes(
      {"HORA_SLICE_SIZE"},
      next == transport::TransportKind::Tcp ? kDefaultTcpSliceBytes : kDefaultShmSliceBytes);
  HORA_CHECK_ARG(value >= 64, "HORA_SLICE_SIZE must be at least 64 bytes");
  return value / 64 * 64;
}
}  // namespace

const char* opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::AllReduce: return "AllReduce";
    case OpKind::ReduceScatter: return "ReduceScatter";
    case OpKind::AllGather: return "AllGather";
    case OpKind::Broadcast: return "Broadcast";
    case OpKind::Reduce: return "Reduce";
    case OpKind::Send: return "Send";
    case OpKind::Recv: return "Recv";
  }
  return "?";
}

namespace {
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
  std::uint64_t hostHash;
  std::uint64_t fingerprint;
  char gpuBusId[32];
};
}  // namespace

Communicator::Communicator(const bootstrap::UniqueId& id, int nranks, int rank,
                           const CommunicatorConfig& config)
    : rank_(rank),
      nranks_(nranks),
      timeout_(config.timeout.count() > 0 ? config.timeout : env::defaultTimeout()),
      chunkBytes_(env::getBytes({"HORA_CHUNK_SIZE"}, kDefaultChunkBytes)),
      spin_(std::chrono::microseconds(env::getInt({"HORA_SPIN_US"}, 200))),
      streamingMinBytes_(env::getBytes({"HORA_STREAMING_MIN"}, kDefaultStreamingMinBytes)),
      singleCopyMinBytes_(env::getBytes({"HORA_SHM_SINGLE_COPY_MIN"}, kDefaultSingleCopyMinBytes)),
      singleCopyMaxBytes_(env::getBytes({"HORA_SHM_SINGLE_COPY_MAX"}, kDefaultSingleCopyMaxBytes)),
      directMaxBytes_(env::getBytes({"HORA_DIRECT_MAX_BYTES"}, kDefaultDirectMaxBytes)),
      zeroCopyMinBytes_(env::getBytes({"HORA_ZERO_COPY_MIN"}, kDefaultZeroCopyMinBytes)) {
  HORA_CHECK_ARG(nranks > 0, "nranks must be positive, got ", nranks);
  HORA_CHECK_ARG(rank >= 0 && rank < nranks, "rank ", rank, " is outside [0, ", nranks, ")");
  HORA_CHECK_ARG(chunkBytes_ >= 64, "HORA_CHUNK_SIZE must be at least 64 bytes");
  log::ScopedThreadRank logRank(rank);
  Deadline deadline = Deadline::after(timeout_);
  bootstrap_ = std::make_unique<bootstrap::Bootstrap>(id, rank, nranks, config.hostRoot, deadline,
                                                      &abort_);
  transport::ConnectorOptions connectorOptions;
  connectorOptions.timeout = timeout_;
  connectorOptions.shm.fifoBytes =
      env::getBytes({"HORA_SHM_FIFO_SIZE"}, connectorOptions.shm.fifoBytes);
  HORA_CHECK_ARG(connectorOptions.shm.fifoBytes >= 4096, "HORA_SHM_FIFO_SIZE must be at least 4K");
  const topology::System& system = processSystem();
  auto placements = gatherPlacements(system, deadline);
  const auto kinds = chooseTransports(placements, system);
  peersShareMemory_ = true;
  for (int p = 0; p < nranks; ++p)
    if (p != rank && kinds[p] != transport::TransportKind::Shm) peersShareMemory_ = false;
  connector_ = std::make_unique<transport::Connector>(*bootstrap_, id.magic, &abort_, kinds,
                                                      connectorOptions);

  // The ring: hosts contiguous, devices by locality (the same on every rank).
  ringRanks_ = topology::ringOrder(placements, &system);
  HORA_ENFORCE(static_cast<int>(ringRanks_.size()) == nranks, "ring of ", ringRanks_.size(),
               " ranks for ", nranks);
  for (int p = 0; p < nranks; ++p)
    if (ringRanks_[p] == rank) ringPos_ = p;
  // Reductions in place wait for room in the next rank's shared-memory FIFO
  // before they take data from the previous one. A rank's sends lead its
  // receives by at most one ring step, so while a step fits in half a FIFO
  // the FIFOs of a ring cannot all be full at once, and such waits always
  // end. Every rank caps the same way, whatever its own transports, so that
  // all ranks cut buffers into the same steps.
  chunkBytes_ = std::min(chunkBytes_, connectorOptions.shm.fifoBytes / 2);
  // Collectives that only move data take larger steps (as large as the cap
  // allows): over shared memory they are single copies, one system call per
  // step.
  moveChunkBytes_ = std::max(chunkBytes_, connectorOptions.shm.fifoBytes / 2);
  staging_ = std::make_unique<StagingPool>(
      sliceBytes(connector_->kindOf(nextRank())), kStagingSlots);
  std::vector<std::uint8_t> readsPrevious(nranks, 0);
  if (nranks > 1) {
    const int next = nextRank();
    connector_->sendTo(next);
    readsPrevious[rank] = connector_->recvFrom(previousRank()).readsPeerMemory();
    std::string order;
    for (int r : ringRanks_) order += strCat(order.empty() ? "" : " -> ", r);
    HORA_LOG(Info, "ring: ", order, " -> ", ringRanks_[0], "; to the next rank via ",
             transport::transportName(connector_->kindOf(next)));
  }
  // Whether every rank may read its previous rank's memory: then single-copy
  // all-gathers take whole blocks per step (all ranks must cut alike). This
  // all-gather is also the barrier that ends init.
  bootstrap_->allGather(readsPrevious.data(), 1, deadline);
  singleCopyRing_ = nranks > 1 && std::all_of(readsPrevious.begin(), readsPrevious.end(),
                                              [](std::uint8_t reads) { return reads != 0; });
  HORA_LOG(Info, "communicator ready: rank ", rank, " of ", nranks, ", chunk ", chunkBytes_,
           " B, slice ", staging_->slotBytes(), " B, timeout ", timeout_.count(), " ms");
}

Communicator::~Communicator() {
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    stopping_ = true;
  }
  queueCv_.notify_all();
  if (worker_.joinable()) worker_.join();
}


std::vector<topology::RankPlacement> Communicator::gatherPlacements(const topology::System& system,
                                                                    const Deadline& deadline) {
  topology::RankPlacement mine =
      topology::localPlacement(rank_, bootstrap_->peers()[rank_].hostHash, "", system);
  std::vector<PlacementRecord> records(nranks_);
  PlacementRecord& own = records[rank_];
  own.rank = rank_;
  own.hasInfiniband = mine.hasInfiniband;
  own.hostHash = mine.hostHash;
  own.fingerprint = mine.topologyFingerprint;
  std::snprintf(own.gpuBusId, sizeof(own.gpuBusId), "%s", mine.gpuBusId.c_str());
  bootstrap_->allGather(records.data(), sizeof(PlacementRecord), deadline);
  std::vector<topology::RankPlacement> all(nranks_);
  for (int r = 0; r < nranks_; ++r)
    all[r] = {records[r].rank, records[r].hostHash, records[r].gpuBusId,
              records[r].hasInfiniband != 0, records[r].fingerprint};
  return all;
}

std::vector<transport::TransportKind> Communicator::chooseTransports(
    const std::vector<topology::RankPlacement>& placements, const topology::System& system) const {
  const auto policy = topology::TransportPolicy::fromEnvironment();
  std::vector<transport::TransportKind> kinds(nranks_, transport::TransportKind::Tcp);
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    auto choice = topology::chooseTransport(placements[rank_], placements[p], system, policy);
    // Until the p2p and ib transports exist, their pairs use shm and tcp.
    switch (choice.kind) {
      case topology::TransportKind::Shm:
      case topology::TransportKind::P2p: kinds[p] = transport::TransportKind::Shm; break;
      case topology::TransportKind::Ib:
      case topology::TransportKind::Tcp: kinds[p] = transport::TransportKind::Tcp; break;
    }
    HORA_LOG(Info, "rank ", rank_, " <-> rank ", p, ": ", transport::transportName(kinds[p]), " (",
             choice.reason, ")");
  }
  return kinds;
}

ProgressEngine& Communicator::freshEngine() {
  if (!engine_) engine_ = std::make_unique<ProgressEngine>(waitPolicy());
  engine_->reset();
  return *engine_;
}

WaitPolicy Communicator::waitPolicy() const { return WaitPolicy{timeout_, spin_, &abort_, rank_}; }

void Communicator::checkUsable() const {
  if (abort_.load())
    fail(ErrorKind::InvalidUsage, "rank ", rank_, ": the communicator was aborted");
  if (!broken_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(stateMutex_);
  if (!brokenReason_.empty())
    throw Error(brokenKind_, strCat("rank ", rank_, ": the communicator is unusable after an earlier error: ",
                                    brokenReason_));
}

void Communicator::markBroken(const Error& error) {
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (brokenReason_.empty()) {
      brokenReason_ = error.what();
      brokenKind_ = error.kind();
      broken_.store(true, std::memory_order_release);
    }
  }
  // Close our connections so that peers waiting on us fail now rather than
  // at their deadline.
  connector_->shutdown();
}

std::string Communicator::brokenReason() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return brokenReason_;
}

ErrorKind Communicator::brokenKind() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return brokenKind_;
}

void Communicator::execute(const std::vector<Op>& ops) {
  checkUsable();
  bool queued;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    queued = !queue_.empty();
  }
  // Keep submission order: behind asynchronous work still queued.
  if (queued) {
    submit(ops)->wait();
    return;
  }
  std::lock_guard<std::mutex> lock(execMutex_);
  log::ScopedThreadRank logRank(rank_);
  try {
    runOps(ops);
  } catch (const Error& error) {
    markBroken(error);
    throw;
  }
}

std::shared_ptr<WorkState> Communicator::submit(std::vector<Op> ops) {
  checkUsable();
  auto work = std::make_shared<WorkState>();
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    queue_.push_back({std::move(ops), work});
    if (!worker_.joinable()) worker_ = std::thread([this] { workerLoop(); });
  }
  queueCv_.notify_one();
  return work;
}

void Communicator::workerLoop() {
  log::setThreadRank(rank_);
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
      std::lock_guard<std::mutex> lock(execMutex_);
      checkUsable();
      try {
        runOps(task.ops);
      } catch (const Error& e) {
        markBroken(e);
        throw;
      }
    } catch (...) {
      error = std::current_exception();
    }
    {
      // Pop only after running, so execute() sees the queue busy meanwhile.
      std::lock_guard<std::mutex> lock(queueMutex_);
      queue_.pop_front();
    }
    task.work->complete(error);
  }
}

void Communicator::finalize() {
  bool idle;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    idle = queue_.empty();
  }
  if (!idle) submit({})->wait();
}

void Communicator::barrier() {
  checkUsable();
  std::lock_guard<std::mutex> lock(execMutex_);
  try {
    bootstrap_->barrier(Deadline::after(timeout_));
  } catch (const Error& error) {
    markBroken(error);
    throw;
  }
}

void Communicator::abort() {
  abort_.store(true);
  connector_->shutdown();
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    stopping_ = true;
  }
  queueCv_.notify_all();
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
  // Whatever was still queued fails.
  std::lock_guard<std::mutex> lock(queueMutex_);
  for (auto& task : queue_)
    task.work->complete(std::make_exception_ptr(
        Error(ErrorKind::InvalidUsage, strCat("rank ", rank_, ": the communicator was aborted"))));
  queue_.clear();
}

int Communicator::createPreMulSum(DataType type, std::uint64_t scalarBits) {
  std::lock_guard<std::mutex> lock(stateMutex_);
  int handle = nextCustomOp_++;
  customOps_[handle] = kernels::ReduceSpec{type, kernels::ReduceKind::PreMulSum, scalarBits};
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

void Communicator::runOps(const std::vector<Op>& ops) {
  // Inside a group, point-to-point operations run first, all at once (so
  // that any pattern of matched sends and receives completes), then the
  // collectives in issue order.
  std::vector<const Op*> p2p;
  for (const Op& op : ops)
    if (op.isPointToPoint()) p2p.push_back(&op);
  if (!p2p.empty()) runPointToPoint(p2p);
  for (const Op& op : ops)
    if (!op.isPointToPoint()) runCollective(op);
}

bool Communicator::useDirectAllReduce(const Op& op) const {
  return op.kind == OpKind::AllReduce && nranks_ > 1 && nranks_ <= kDirectMaxRanks &&
         op.count * dataTypeSize(op.type) <= directMaxBytes_;
}

void Communicator::exchangeWithAll(const void* mine, void* all, std::size_t bytes,
                                   const char* what) {
  char* slots = static_cast<char*>(all);
  std::memcpy(slots + rank_ * bytes, mine, bytes);
  ProgressEngine& engine = freshEngine();
  for (int peer = 0; peer < nranks_; ++peer) {
    if (peer == rank_) continue;
    auto& connection = connector_->sendTo(peer);
    engine.add(&connection);
    connection.post(mine, bytes);
  }
  engine.progressAll();
  for (int peer = 0; peer < nranks_; ++peer) {
    if (peer == rank_) continue;
    auto& connection = connector_->recvFrom(peer);
    engine.add(&connection);
    connection.post(slots + peer * bytes, bytes);
  }
  engine.drain(what);
}

void Communicator::runDirectAllReduce(const Op& op) {
  // Every rank ends with the same bits: each reduces all inputs in rank
  // order, whatever order they arrived in.
  const std::size_t bytes = op.count * dataTypeSize(op.type);
  gathered_.resize(bytes * nranks_);
  exchangeWithAll(op.send, gathered_.data(), bytes, "exchanging inputs of a small all-reduce");
  kernels::reduceHost(op.reduce, op.recv, gathered_.data(), nullptr, op.count, false);
  for (int r = 1; r < nranks_; ++r)
    kernels::reduceHost(op.reduce, op.recv, gathered_.data() + r * bytes, op.recv, op.count,
                        r == nranks_ - 1);
}

void Communicator::runCollective(const Op& op) {
  HORA_LOG(Trace, opKindName(op.kind), " count ", op.count, " ", dataTypeName(op.type), " root ",
           op.root);
  if (useDirectAllReduce(op)) {
    runDirectAllReduce(op);
    return;
  }
  if (mayUseZeroCopy(op) && runZeroCopy(op)) return;
  const std::size_t elemSize = dataTypeSize(op.type);
  const std::size_t outputBytes =
      op.count * elemSize * (op.kind == OpKind::AllGather ? static_cast<std::size_t>(nranks_) : 1);
  const bool movesOnly = op.kind == OpKind::AllGather || op.kind == OpKind::Broadcast;
  const bool singleCopy = op.kind == OpKind::AllGather && outputBytes >= singleCopyMinBytes_ &&
                          outputBytes < singleCopyMaxBytes_;
  ProgressEngine& engine = freshEngine();
  transport::SendConnection* next = nullptr;
  transport::RecvConnection* prev = nullptr;
  if (nranks_ > 1) {
    next = &connector_->sendTo(nextRank());
    prev = &connector_->recvFrom(previousRank());
    engine.add(next);
    engine.add(prev);
    // Both ends pad at the same point of the stream, so every collective's
    // data starts aligned in a shared-memory FIFO and can be reduced there.
    next->alignStream(kStreamAlignment);
    prev->alignStream(kStreamAlignment);
  }
  // Streaming stores, except for reductions in place: there each output
  // line was read as an input moments before and sits in cache, where
  // ordinary stores are cheaper (2-rank all-reduce, 16-32 MiB in place:
  // 4.2-5.8 GB/s busbw with ordinary stores, 3.6-4.4 with streaming ones;
  // out of place the reverse). An all-gather or broadcast in place still
  // receives into lines nobody read, where streaming stores win.
  const bool reducesInPlace =
      !movesOnly && buffersOverlap(op, opBufferBytes(op, rank_, nranks_));
  HostPrimitives prims(engine, next, prev, op.send, op.recv, op.reduce, *staging_,
                       outputBytes >= streamingMinBytes_ && !reducesInPlace, singleCopy);
  algorithms::Ring ring{nranks_, ringPos_, ringRanks_.data()};
  // Single-copy steps move no bytes through the FIFOs: as large as a block,
  // since each step costs a system call, when every rank takes part.
  const std::size_t stepBytes = singleCopy && singleCopyRing_ ? outputBytes
                                : movesOnly                  ? moveChunkBytes_
                                                             : chunkBytes_;
  const std::size_t chunk = std::max<std::size_t>(1, stepBytes / elemSize);
  const std::size_t align = std::max<std::size_t>(1, 64 / elemSize);
  auto positionOf = [&](int rank) {
    for (int p = 0; p < nranks_; ++p)
      if (ringRanks_[p] == rank) return p;
    return 0;
  };
  switch (op.kind) {
    case OpKind::AllReduce: algorithms::ringAllReduce(prims, ring, op.count, chunk, align); break;
    case OpKind::ReduceScatter: algorithms::ringReduceScatter(prims, ring, op.count, chunk); break;
    case OpKind::AllGather: algorithms::ringAllGather(prims, ring, op.count, chunk); break;
    case OpKind::Broadcast:
      algorithms::ringBroadcast(prims, ring, positionOf(op.root), op.count, chunk);
      break;
    case OpKind::Reduce:
      algorithms::ringReduce(prims, ring, positionOf(op.root), op.count, chunk);
      break;
    default: HORA_ENFORCE(false, "not a collective: ", opKindName(op.kind));
  }
  prims.finish();
}

void Communicator::runPointToPoint(const std::vector<const Op*>& ops) {
  // Messages to self are copies, matched in issue order.
  std::vector<const Op*> selfSends, selfRecvs;
  for (const Op* op : ops)
    if (op->peer == rank_) (op->kind == OpKind::Send ? selfSends : selfRecvs).push_back(op);
  if (selfSends.size() != selfRecvs.size())
    fail(ErrorKind::InvalidUsage, "rank ", rank_, ": ", selfSends.size(), " send(s) to self but ",
         selfRecvs.size(), " receive(s) from self in one group");
  for (std::size_t i = 0; i < selfSends.size(); ++i) {
    std::size_t bytes = selfSends[i]->count * dataTypeSize(selfSends[i]->type);
    std::size_t want = selfRecvs[i]->count * dataTypeSize(selfRecvs[i]->type);
    if (bytes != want)
      fail(ErrorKind::InvalidUsage, "rank ", rank_, ": send to self of ", bytes,
           " bytes is matched by a receive of ", want, " bytes");
    if (bytes > 0) std::memmove(selfRecvs[i]->recv, selfSends[i]->send, bytes);
  }

  // Each message to a peer is preceded by its size, so a mismatched pair is
  // reported instead of corrupting the stream.
  ProgressEngine& engine = freshEngine();
  std::deque<std::uint64_t> headers;  // stable addresses while in flight
  for (const Op* op : ops) {
    if (op->kind != OpKind::Send || op->peer == rank_) continue;
    auto& connection = connector_->sendTo(op->peer);
    engine.add(&connection);
    headers.push_back(op->count * dataTypeSize(op->type));
    connection.post(&headers.back(), sizeof(std::uint64_t));
    connection.post(op->send, headers.back());
  }
  engine.progressAll();
  for (const Op* op : ops) {
    if (op->kind != OpKind::Recv || op->peer == rank_) continue;
    auto& connection = connector_->recvFrom(op->peer);
    engine.add(&connection);
    std::uint64_t& header = headers.emplace_back(0);
    connection.post(&header, sizeof(header));
    const std::uint64_t target = connection.postedBytes();
    engine.waitUntil([&] { return connection.completedBytes() >= target; },
                     "waiting for a message header");
    const std::uint64_t expected = op->count * dataTypeSize(op->type);
    if (header != expected)
      fail(ErrorKind::InvalidUsage, "rank ", rank_, ": ncclRecv from ", bootstrap_->describe(op->peer),
           " expects ", expected, " bytes (", op->count, " x ", dataTypeName(op->type),
           ") but that rank sent ", header, " bytes");
    connection.post(op->recv, expected);
  }
  engine.drain("exchanging point-to-point messages");
}

}  // namespace hora::core
