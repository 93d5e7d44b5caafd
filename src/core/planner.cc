#include "core/planner.h"

#include <algorithm>
#include <bit>

#include "transport/shm/shm_layout.h"

namespace hora::core {

const char* algorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::Ring: return "ring";
    case Algorithm::Direct: return "direct";
    case Algorithm::Windows: return "windows";
    case Algorithm::PointToPoint: return "point-to-point";
  }
  return "?";
}

Planner::Planner(const Tuning& tuning, std::size_t moveChunkBytes)
    : tuning_(tuning), moveChunkBytes_(moveChunkBytes) {}

bool Planner::useDirect(const Op& op, const CommShape& shape) const {
  return op.kind == OpKind::AllReduce && shape.nranks > 1 &&
         shape.nranks <= Tuning::kDirectMaxRanks && op.bytes <= tuning_.directMaxBytes;
}

bool Planner::mayUseWindows(const Op& op, const CommShape& shape) const {
  switch (op.kind) {
    case OpKind::AllReduce:
    case OpKind::ReduceScatter:
    case OpKind::AllGather:
    case OpKind::Broadcast:
    case OpKind::Reduce: break;
    default: return false;
  }
  // The larger buffer's size is the same on every rank. Usable windows
  // exist only where all ranks share a host: elsewhere no collective pays
  // for the offers.
  const OpBufferBytes bytes = opBufferBytes(op, op.root >= 0 ? op.root : 0, shape.nranks);
  return shape.nranks > 1 && shape.windowsUsable &&
         std::max(bytes.send, bytes.recv) >= tuning_.zeroCopyMinBytes;
}

Protocol Planner::protocolFor(std::size_t bytes) const {
  return bytes <= tuning_.llMaxBytes ? Protocol::LL : Protocol::Simple;
}

Plan Planner::plan(const Op& op, const CommShape& shape) const {
  Plan plan;
  plan.protocol = protocolFor(op.bytes);
  if (op.isPointToPoint()) {
    plan.algorithm = Algorithm::PointToPoint;
    return plan;
  }
  // Element sizes are powers of two: shifts, not divisions, on the path of
  // every call.
  const int elemShift = std::countr_zero(dataTypeSize(op.type));
  plan.alignElems = std::max<std::size_t>(1, std::size_t{64} >> elemShift);
  const std::size_t outputBytes =
      op.bytes * (op.kind == OpKind::AllGather ? static_cast<std::size_t>(shape.nranks) : 1);
  const bool movesOnly = op.kind == OpKind::AllGather || op.kind == OpKind::Broadcast;
  // All-gathers with outputs in [min, max) read the previous rank's buffers
  // directly (one copy) where the transport allows it. An all-gather has
  // every rank both send and receive, so the FIFO's two copies both fall on
  // each core; a single copy halves that, which wins while the data is in
  // cache. Larger outputs are bound by memory, where the FIFO path's
  // streaming stores win; broadcasts split the two copies across two cores.
  plan.singleCopy = op.kind == OpKind::AllGather && outputBytes >= tuning_.singleCopyMinBytes &&
                    outputBytes < tuning_.singleCopyMaxBytes;
  // Streaming stores, except for reductions in place: there each output
  // line was read as an input moments before and sits in cache, where
  // ordinary stores are cheaper. An all-gather or broadcast in place still
  // receives into lines nobody read, where streaming stores win. (Whether
  // buffers overlap differs between ranks; streaming changes no message.)
  const bool reducesInPlace = !movesOnly && buffersOverlap(op, opBufferBytes(op, shape.rank, shape.nranks));
  const bool reduces = op.kind == OpKind::AllReduce || op.kind == OpKind::ReduceScatter || op.kind == OpKind::Reduce;
  const std::size_t streamingMin = reduces ? tuning_.reductionStreamingMinBytes : tuning_.streamingMinBytes;
  plan.streamingStores = outputBytes >= streamingMin && !reducesInPlace;
  plan.streamingFifo = std::max(op.bytes, outputBytes) >= tuning_.fifoStreamingMinBytes;
  // Single-copy steps move no bytes through the FIFOs: as large as a block,
  // since each step costs a system call, when every rank takes part.
  // Collectives that only move data take larger steps than reductions.
  // Steps over LL fit in half of the LL FIFO, as other steps in half of
  // the Simple one (transport/shm/shm_layout.h): larger ones would leave
  // a ring whose FIFOs are all full waiting for room for ever.
  const std::size_t fifoStepBytes = movesOnly ? moveChunkBytes_ : tuning_.chunkBytes;
  const std::size_t stepBytes =
      plan.singleCopy && shape.singleCopyRing ? outputBytes
      : plan.protocol == Protocol::LL         ? std::min(fifoStepBytes, transport::kShmLLStepMaxBytes)
                                              : fifoStepBytes;
  plan.chunkElems = std::max<std::size_t>(1, stepBytes >> elemShift);
  plan.fallback = Algorithm::Ring;
  const bool directOnly =
      op.kind == OpKind::AllToAll || op.kind == OpKind::Gather || op.kind == OpKind::Scatter;
  plan.algorithm = directOnly || useDirect(op, shape) ? Algorithm::Direct
                   : mayUseWindows(op, shape) ? Algorithm::Windows
                                              : Algorithm::Ring;
  return plan;
}

}  // namespace hora::core
