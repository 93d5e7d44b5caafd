#include "core/host_executor.h"

#include <cstring>
#include <deque>
#include <numeric>

#include "algorithms/direct.h"
#include "algorithms/point_to_point.h"
#include "algorithms/ring.h"
#include "base/error.h"
#include "base/log.h"
#include "core/buffer_layout.h"

namespace hora::core {

namespace {
constexpr int kStagingSlots = 16;
}  // namespace

HostExecutor::HostExecutor(HostExecutorContext context, const Tuning& tuning,
                           std::size_t moveChunkBytes, std::size_t sliceBytes)
    : ctx_(std::move(context)),
      ring_{ctx_.nranks, 0, nullptr},
      rankOrder_(ctx_.nranks),
      planner_(tuning, moveChunkBytes),
      engine_(ctx_.wait),
      staging_(sliceBytes, kStagingSlots),
      links_(ctx_.nranks) {
  for (int p = 0; p < ctx_.nranks; ++p)
    if (ctx_.ringRanks[p] == ctx_.rank) ring_.pos = p;
  ring_.ranks = ctx_.ringRanks.data();
  std::iota(rankOrder_.begin(), rankOrder_.end(), 0);
}

ProgressEngine& HostExecutor::freshEngine() {
  engine_.reset();
  return engine_;
}

void HostExecutor::run(const std::vector<Op>& ops) {
  std::vector<const Op*> p2p;
  for (const Op& op : ops)
    if (op.isPointToPoint()) p2p.push_back(&op);
  if (!p2p.empty()) runPointToPoint(p2p);
  for (const Op& op : ops)
    if (!op.isPointToPoint()) runCollective(op);
}

void HostExecutor::runCollective(const Op& op) {
  checkBufferOverlap(op, ctx_.rank, ctx_.nranks);
  const CommShape shape{ctx_.rank, ctx_.nranks, ctx_.singleCopyRing, ctx_.windows.anyUsable()};
  const Plan plan = planner_.plan(op, shape);
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
  options.singleCopy = plan.singleCopy;
  options.alignStreams = algorithm != Algorithm::Direct;
  options.protocol = plan.protocol;
  HostPrimitives prims(freshEngine(), ctx_.connector, links_, op.send, op.recv, op.reduce,
                       staging_, options);
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
  switch (op.kind) {
    case OpKind::AllReduce:
      algorithms::ringAllReduce(prims, ring_, channel, op.count, chunk, align);
      break;
    case OpKind::ReduceScatter:
      algorithms::ringReduceScatter(prims, ring_, channel, op.count, chunk, align);
      break;
    case OpKind::AllGather:
      algorithms::ringAllGather(prims, ring_, channel, op.count, chunk, align);
      break;
    case OpKind::Broadcast:
      algorithms::ringBroadcast(prims, ring_, channel, op.root, op.count, chunk, align);
      break;
    case OpKind::Reduce:
      algorithms::ringReduce(prims, ring_, channel, op.root, op.count, chunk, align);
      break;
    default: HORA_ENFORCE(false, "not a collective: ", opKindName(op.kind));
  }
  prims.finish();
}

void HostExecutor::exchangeWithAll(const void* mine, void* all, std::size_t bytes,
                                   const char* what) {
  char* slots = static_cast<char*>(all);
  std::memcpy(slots + ctx_.rank * bytes, mine, bytes);
  ProgressEngine& engine = freshEngine();
  for (int peer = 0; peer < ctx_.nranks; ++peer) {
    if (peer == ctx_.rank) continue;
    auto& connection = ctx_.connector.sendTo(peer);
    engine.add(&connection);
    connection.beginMessage(planner_.protocolFor(bytes));
    connection.post(mine, bytes);
  }
  engine.progressAll();
  for (int peer = 0; peer < ctx_.nranks; ++peer) {
    if (peer == ctx_.rank) continue;
    auto& connection = ctx_.connector.recvFrom(peer);
    engine.add(&connection);
    connection.beginMessage(planner_.protocolFor(bytes));
    connection.post(slots + peer * bytes, bytes);
  }
  engine.drain(what);
}

void HostExecutor::runPointToPoint(const std::vector<const Op*>& ops) {
  const int rank = ctx_.rank;
  // Messages to self are copies, matched in issue order.
  std::vector<const Op*> selfSends, selfRecvs;
  for (const Op* op : ops)
    if (op->peer == rank) (op->kind == OpKind::Send ? selfSends : selfRecvs).push_back(op);
  if (selfSends.size() != selfRecvs.size())
    fail(ErrorKind::InvalidUsage, "rank ", rank, ": ", selfSends.size(), " send(s) to self but ",
         selfRecvs.size(), " receive(s) from self in one group");
  for (std::size_t i = 0; i < selfSends.size(); ++i) {
    if (selfSends[i]->bytes != selfRecvs[i]->bytes)
      fail(ErrorKind::InvalidUsage, "rank ", rank, ": send to self of ", selfSends[i]->bytes,
           " bytes is matched by a receive of ", selfRecvs[i]->bytes, " bytes");
    if (selfSends[i]->bytes > 0)
      std::memmove(selfRecvs[i]->recv, selfSends[i]->send, selfSends[i]->bytes);
  }

  // Each message to a peer is preceded by its size, so a mismatched pair is
  // reported instead of corrupting the stream; the message itself is the
  // schedule of algorithms/point_to_point.h, moved as bytes (a message has
  // no arithmetic, and its buffer need not be aligned to its type). Both
  // ends name each piece's protocol before posting it (beginMessage),
  // chosen by its size: the header's is fixed, and the receiver names the
  // data's only once the header has matched it.
  ProgressEngine& engine = freshEngine();
  const algorithms::Channel channel{0, 1};
  auto messagePrimitives = [&](const Op& op) {
    HostPrimitives::Options options;
    options.alignStreams = false;
    options.protocol = planner_.protocolFor(op.bytes);
    const kernels::ReduceSpec bytes{DataType::Uint8, kernels::ReduceKind::Sum, 0};
    return HostPrimitives(engine, ctx_.connector, links_, op.send, op.recv, bytes, staging_, options);
  };
  std::deque<std::uint64_t> headers;  // stable addresses while in flight
  for (const Op* op : ops) {
    if (op->kind != OpKind::Send || op->peer == rank) continue;
    auto& connection = ctx_.connector.sendTo(op->peer);
    engine.add(&connection);
    headers.push_back(op->bytes);
    connection.beginMessage(planner_.protocolFor(sizeof(std::uint64_t)));
    connection.post(&headers.back(), sizeof(std::uint64_t));
    HostPrimitives prims = messagePrimitives(*op);
    algorithms::sendMessage(prims, op->peer, channel, op->bytes, 64);
  }
  engine.progressAll();
  for (const Op* op : ops) {
    if (op->kind != OpKind::Recv || op->peer == rank) continue;
    auto& connection = ctx_.connector.recvFrom(op->peer);
    engine.add(&connection);
    std::uint64_t& header = headers.emplace_back(0);
    connection.beginMessage(planner_.protocolFor(sizeof(header)));
    connection.post(&header, sizeof(header));
    const std::uint64_t target = connection.postedBytes();
    engine.waitUntil([&] { return connection.completedBytes() >= target; },
                     "waiting for a message header");
    if (header != op->bytes)
      fail(ErrorKind::InvalidUsage, "rank ", rank, ": ncclRecv from ",
           ctx_.bootstrap.describe(op->peer), " expects ", op->bytes, " bytes (", op->count, " x ",
           dataTypeName(op->type), ") but that rank sent ", header, " bytes");
    HostPrimitives prims = messagePrimitives(*op);
    algorithms::recvMessage(prims, op->peer, channel, op->bytes, 64);
  }
  engine.drain("exchanging point-to-point messages");
}

}  // namespace hora::core
