#include "core/host_executor.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <numeric>

#include "algorithms/direct.h"
#include "algorithms/point_to_point.h"
#include "algorithms/ring.h"
#include "base/error.h"
#include "base/log.h"

namespace hora::core {

namespace {
constexpr int kStagingSlots = 16;

// Staging slots enough for a direct all-reduce's pre-multiplied sends.
// The direct schedule sends its whole input to every other rank before it
// receives anything, and with a PreMulSum (ncclAvg on floating types) each
// of those sends is the scaled input, built in staging slots. A slot is
// free again only once its bytes have left, and bytes to a peer that is
// not a ring neighbour leave only once that peer has accepted the
// connection, which it does when it first receives from this rank: after
// its own sends. With fewer slots than the sends fill, every rank would
// wait for every other for ever. The direct path takes up to
// directMaxBytes per rank and 16 ranks (the planner), so that many slots
// are kept (slices are whole elements: multiples of 64 bytes); above 16
// ranks nothing is direct.
int stagingSlots(const Tuning& tuning, int nranks, std::size_t sliceBytes) {
  const std::size_t peers = nranks > Tuning::kDirectMaxRanks ? 0 : static_cast<std::size_t>(nranks - 1);
  const std::size_t perPeer = (tuning.directMaxBytes + sliceBytes - 1) / sliceBytes;
  return static_cast<int>(std::max<std::size_t>(kStagingSlots, peers * perPeer));
}

// Every receive of a group is in, and a send still waits for its peer to
// take it: the usual cause is a program whose ranks each send before they
// receive, ungrouped (a ring shift), larger than a connection's buffer.
// Each rank then waits for the other, alive, until the deadline; NCCL
// hangs there. The error says what to change.
[[noreturn]] void rethrowWithSendOrderHint(const ProgressEngine& engine) {
  try {
    throw;
  } catch (const Error& error) {
    const bool receivesDone = std::ranges::all_of(
        engine.recvs(), [](const transport::RecvConnection* r) { return r->completedBytes() == r->postedBytes(); });
    const bool sendWaits = std::ranges::any_of(
        engine.sends(), [](const transport::SendConnection* s) { return s->completedBytes() != s->postedBytes(); });
    if (error.kind() != ErrorKind::Remote || !receivesDone || !sendWaits) throw;
    throw Error(error.kind(),
                strCat(error.what(),
                       "; a send larger than the connection's buffer ends only when its peer receives it, so ranks "
                       "that each send before they receive wait for each other: issue the sends and receives in "
                       "one group (ncclGroupStart/ncclGroupEnd, or exchangeAsync)"),
                error.failedRank());
  }
}
}  // namespace

HostExecutor::HostExecutor(HostExecutorContext context, const Tuning& tuning,
                           std::size_t moveChunkBytes, std::size_t sliceBytes)
    : ctx_(std::move(context)),
      ring_{ctx_.nranks, 0, nullptr},
      rankOrder_(ctx_.nranks),
      planner_(tuning, moveChunkBytes),
      trace_(StepTrace::open(tuning.tracePrefix, tuning.traceRecords, ctx_.rank, ctx_.nranks)),
      engine_(ctx_.wait),
      staging_(sliceBytes, stagingSlots(tuning, ctx_.nranks, sliceBytes)),
      links_(ctx_.nranks),
      messagesTo_(ctx_.nranks, 0),
      messagesFrom_(ctx_.nranks, 0) {
  for (int p = 0; p < ctx_.nranks; ++p)
    if (ctx_.ringRanks[p] == ctx_.rank) ring_.pos = p;
  ring_.ranks = ctx_.ringRanks.data();
  engine_.setTrace(trace_.get());
  ringNext_ = ring_.next();
  ringPrev_ = ring_.prev();
  std::iota(rankOrder_.begin(), rankOrder_.end(), 0);
}

ProgressEngine& HostExecutor::freshEngine() {
  engine_.reset();
  return engine_;
}

void HostExecutor::run(std::span<const Op> ops) {
  try {
    runAll(ops);
  } catch (const transport::StampMismatch& mismatch) {
    throw agreementError(ctx_.rank, mismatch, currentDescriptor());
  }
}

std::optional<OpDescriptor> HostExecutor::currentDescriptor() const {
  const Op* op = current_.op;
  if (op == nullptr) return std::nullopt;
  if (!op->isPointToPoint()) return collectiveDescriptor(*op, current_.sequence, ctx_.rank, current_.windows);
  return messageDescriptor(op->bytes, current_.sequence, op->kind == OpKind::Send ? ctx_.rank : op->peer, op->tag);
}

void HostExecutor::runAll(std::span<const Op> ops) {
  std::vector<const Op*> p2p;
  for (const Op& op : ops)
    if (op.isPointToPoint()) p2p.push_back(&op);
  if (!p2p.empty()) runPointToPoint(p2p);
  for (const Op& op : ops)
    if (!op.isPointToPoint()) runCollective(op);
}

void HostExecutor::runCollective(const Op& op) {
  // Counted before anything can fail, so that every rank numbers its calls
  // alike whatever became of earlier ones.
  current_ = {&op, ++collectives_};
  TracedOp traced(trace_.get(), opKindName(op.kind), op.bytes);
  const CommShape shape{ctx_.rank, ctx_.nranks, ctx_.singleCopyRing, ctx_.windows.everUsable()};
  const Plan plan = planner_.plan(op, shape);
  // The stamp says whether this rank takes the zero-copy path: a rank that
  // does waits for its peers' offers, which must never be taken from the
  // ring bytes of a peer whose windows differ.
  current_.windows = plan.algorithm == Algorithm::Windows;
  if (ctx_.checkAgreement) collectiveStamp_ = collectiveStamp(op, current_.sequence, ctx_.rank, current_.windows);
  HORA_LOG(Trace, opKindName(op.kind), " count ", op.count, " ", dataTypeName(op.type), " root ",
           op.root, ": ", algorithmName(plan.algorithm));
  if (plan.algorithm == Algorithm::Windows) {
    if (runWindows(op, plan)) {
      windowCollectives_.fetch_add(1);
      return;
    }
    runSchedule(op, plan, plan.fallback);
    return;
  }
  runSchedule(op, plan, plan.algorithm);
}

void HostExecutor::runSchedule(const Op& op, const Plan& plan, Algorithm algorithm) {
  HostPrimitives::Options options;
  options.streamingStores = plan.streamingStores;
  options.streamingFifo = plan.streamingFifo;
  options.singleCopy = plan.singleCopy;
  options.alignStreams = algorithm != Algorithm::Direct;
  options.protocol = plan.protocol;
  options.stamp = currentStamp();
  HostPrimitives prims(freshEngine(), ctx_.connector, links_, op.send, op.recv, op.reduce,
                       staging_, options);
  // Stamps go to the next rank of the ring and come from the previous one
  // in every collective, whatever its schedule: so every rank checks one,
  // also where the schedule gives it no data (a broadcast's root, every
  // rank of a zero-count call).
  if (options.stamp != nullptr && ctx_.nranks > 1) prims.stampRing(ringNext_, ringPrev_);
  // The host executor runs one channel per rank: its thread is the channel.
  const algorithms::Channel channel{0, 1};
  const std::size_t chunk = plan.chunkElems, align = plan.alignElems;
  const int n = ctx_.nranks, self = ctx_.rank;
  if (algorithm == Algorithm::Direct) {
    switch (op.kind) {
      case OpKind::AllReduce:
        algorithms::directAllReduce(prims, rankOrder_.data(), n, self, channel, op.count, align);
        break;
      case OpKind::AllToAll: algorithms::directAllToAll(prims, n, self, channel, op.count, align); break;
      case OpKind::Gather:
        algorithms::directGather(prims, n, self, op.root, channel, op.count, align);
        break;
      case OpKind::Scatter:
        algorithms::directScatter(prims, n, self, op.root, channel, op.count, align);
        break;
      default: HORA_ENFORCE(false, "no direct schedule for ", opKindName(op.kind));
    }
    prims.finish();
    return;
  }
  const auto collective = ringCollectiveOf(op.kind);
  HORA_ENFORCE(collective.has_value(), "not a ring collective: ", opKindName(op.kind));
  algorithms::runRing(prims, *collective, ring_, channel, op.root, op.count, chunk, align);
  prims.finish();
}

void HostExecutor::exchangeWithAll(const void* mine, void* all, std::size_t bytes,
                                   const char* what) {
  char* slots = static_cast<char*>(all);
  std::memcpy(slots + ctx_.rank * bytes, mine, bytes);
  ProgressEngine& engine = freshEngine();
  const transport::OpStamp* stamp = currentStamp();
  for (int peer = 0; peer < ctx_.nranks; ++peer) {
    if (peer == ctx_.rank) continue;
    auto& connection = ctx_.connector.sendTo(peer);
    connection.streamCopies(false);  // a few bytes, read at once
    engine.add(&connection);
    connection.beginMessage(planner_.protocolFor(bytes), stamp);
    connection.post(mine, bytes);
  }
  engine.progressAll();
  for (int peer = 0; peer < ctx_.nranks; ++peer) {
    if (peer == ctx_.rank) continue;
    auto& connection = ctx_.connector.recvFrom(peer, engine.progressWhileWaiting());
    engine.add(&connection);
    connection.beginMessage(planner_.protocolFor(bytes), stamp);
    connection.post(slots + peer * bytes, bytes);
  }
  // Every stamp rode on its message: the receives completing checked them.
  engine.drain(what);
}

void HostExecutor::runPointToPoint(const std::vector<const Op*>& ops) {
  const int rank = ctx_.rank;
  std::uint64_t bytes = 0;
  if (trace_ != nullptr) [[unlikely]]
    for (const Op* op : ops) bytes += op->bytes;
  TracedOp traced(trace_.get(), "point-to-point", bytes);
  // Messages to self are copies, matched in issue order. That they pair up
  // was checked before the call ran (core/self_messages.h), so that a
  // group breaking the rule fails alone.
  std::vector<const Op*> selfSends, selfRecvs;
  for (const Op* op : ops)
    if (op->peer == rank) (op->kind == OpKind::Send ? selfSends : selfRecvs).push_back(op);
  HORA_ENFORCE(selfSends.size() == selfRecvs.size(), "rank ", rank, ": unpaired messages to itself reached the executor");
  for (std::size_t i = 0; i < selfSends.size(); ++i) {
    HORA_ENFORCE(selfSends[i]->bytes == selfRecvs[i]->bytes, "rank ", rank,
                 ": a message to itself of another size than its receive reached the executor");
    if (selfSends[i]->bytes > 0)
      std::memmove(selfRecvs[i]->recv, selfSends[i]->send, selfSends[i]->bytes);
  }

  // Each message is an operation of its own on its connection, stamped
  // with its number between the two ranks and its size (core/agreement.h),
  // so a receive that does not match its send is reported before a byte of
  // it lands in the receive buffer; the message itself is the schedule of
  // algorithms/point_to_point.h, moved as bytes (a message has no
  // arithmetic, and its buffer need not be aligned to its type). Both ends
  // name the protocol by the message's size; when the sizes differ the
  // stamp, which always travels the same way, says so before either reads.
  ProgressEngine& engine = freshEngine();
  const algorithms::Channel channel{0, 1};
  std::deque<transport::OpStamp> stamps;  // stable addresses while in use
  std::vector<transport::SendConnection*> sent;
  std::vector<transport::RecvConnection*> received;
  auto messagePrimitives = [&](const Op& op, const transport::OpStamp& stamp) {
    HostPrimitives::Options options;
    options.alignStreams = false;
    options.protocol = planner_.protocolFor(op.bytes);
    options.stamp = &stamp;
    const kernels::ReduceSpec bytes{DataType::Uint8, kernels::ReduceKind::Sum, 0};
    return HostPrimitives(engine, ctx_.connector, links_, op.send, op.recv, bytes, staging_, options);
  };
  for (const Op* op : ops) {
    if (op->kind != OpKind::Send || op->peer == rank) continue;
    current_ = {op, ++messagesTo_[op->peer]};
    const transport::OpStamp& stamp =
        stamps.emplace_back(toStamp(messageDescriptor(op->bytes, current_.sequence, rank, op->tag)));
    HostPrimitives prims = messagePrimitives(*op, stamp);
    prims.attachLinks(op->peer, -1);
    algorithms::sendMessage(prims, op->peer, channel, op->bytes, 64);
    // Nothing more of this message: a stamp no byte carried leaves alone.
    transport::SendConnection& connection = ctx_.connector.sendTo(op->peer);
    ProgressEngine::onConnection(connection, [&] { connection.flushStamp(); });
    sent.push_back(&connection);
  }
  engine.progressAll();
  for (const Op* op : ops) {
    if (op->kind != OpKind::Recv || op->peer == rank) continue;
    current_ = {op, ++messagesFrom_[op->peer]};
    const transport::OpStamp& stamp =
        stamps.emplace_back(toStamp(messageDescriptor(op->bytes, current_.sequence, op->peer, op->tag)));
    HostPrimitives prims = messagePrimitives(*op, stamp);
    prims.attachLinks(-1, op->peer);
    algorithms::recvMessage(prims, op->peer, channel, op->bytes, 64);
    received.push_back(&ctx_.connector.recvFrom(op->peer, engine.progressWhileWaiting()));
  }
  try {
    engine.drain("exchanging point-to-point messages");
  } catch (const Error&) {
    rethrowWithSendOrderHint(engine);
  }
  engine.waitUntil(
      [&] {
        for (transport::SendConnection* connection : sent)
          if (connection->stampPending()) return false;
        for (transport::RecvConnection* connection : received)
          if (!ProgressEngine::onConnection(*connection, [&] { return connection->stampChecked(); }))
            return false;
        return true;
      },
      "exchanging point-to-point messages");
}

}  // namespace hora::core
