// One operation as the executors see it: API calls become Ops, groups become
// lists of Ops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "algorithms/ring.h"
#include "hora/types.h"
#include "kernels/reduce_host.h"

namespace hora::core {

enum class OpKind {
  AllReduce,
  ReduceScatter,
  AllGather,
  Broadcast,
  Reduce,
  AllToAll,
  Gather,
  Scatter,
  Send,
  Recv,
};

// Why an op runs: a program's call, the meeting that opens a call the ranks
// make over the bootstrap ring instead of the connections (a split, a window
// registration), or a barrier. Those run a one-element all-reduce whose
// stamp names the call, so that a rank meeting it with a collective of its
// own gets the agreement check's error at once, on both sides, instead of
// both waiting until the deadline.
enum class OpPurpose : std::uint8_t { ProgramCall, CommSplit, WindowRegister, Barrier };

// Where an op's buffers live; it picks the executor that runs it.
enum class MemoryKind { Host, Device };

const char* opKindName(OpKind kind);

// The ring schedule of a collective kind, if it has one.
inline std::optional<algorithms::RingCollective> ringCollectiveOf(OpKind kind) {
  switch (kind) {
    case OpKind::AllReduce: return algorithms::RingCollective::AllReduce;
    case OpKind::ReduceScatter: return algorithms::RingCollective::ReduceScatter;
    case OpKind::AllGather: return algorithms::RingCollective::AllGather;
    case OpKind::Broadcast: return algorithms::RingCollective::Broadcast;
    case OpKind::Reduce: return algorithms::RingCollective::Reduce;
    default: return std::nullopt;
  }
}

struct Op {
  OpKind kind = OpKind::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  // Elements: per rank for ReduceScatter (recvcount), AllGather (sendcount),
  // and per block for AllToAll, Gather and Scatter (count).
  std::size_t count = 0;
  std::size_t bytes = 0;  // count x the element size
  DataType type = DataType::Float32;
  kernels::ReduceSpec reduce;
  int root = -1;  // Broadcast, Reduce, Gather, Scatter
  int peer = -1;  // Send, Recv
  // Send, Recv: the program's tag (the C++ API's, PyTorch's; 0 for nccl.h).
  // Messages are taken in the order sent, not matched by tag; the tag
  // travels in the message's stamp and a receive of another tag fails.
  int tag = 0;
  MemoryKind memory = MemoryKind::Host;
  // The caller's CUDA stream (cudaStream_t), kept for the device executor;
  // host work ignores it.
  void* stream = nullptr;
  // The C++ API's calls: on device buffers they run on the communicator's
  // own stream and complete (return, or finish their Work) once the GPU has
  // run them, as host calls do. nccl.h calls only enqueue on the caller's
  // stream.
  bool completeOnReturn = false;
  OpPurpose purpose = OpPurpose::ProgramCall;

  bool isPointToPoint() const { return kind == OpKind::Send || kind == OpKind::Recv; }
};

// Bytes of `rank`'s send and receive buffers in `op`; 0 where the operation
// does not use that buffer on that rank (a broadcast's send buffer off the
// root, a reduce's receive buffer off the root, a send's receive buffer).
struct OpBufferBytes {
  std::size_t send;
  std::size_t recv;
};

inline OpBufferBytes opBufferBytes(const Op& op, int rank, int nranks) {
  const std::size_t block = op.bytes;
  const std::size_t all = block * static_cast<std::size_t>(nranks);
  switch (op.kind) {
    case OpKind::AllReduce: return {block, block};
    case OpKind::ReduceScatter: return {all, block};
    case OpKind::AllGather: return {block, all};
    case OpKind::Broadcast: return {rank == op.root ? block : 0, block};
    case OpKind::Reduce: return {block, rank == op.root ? block : 0};
    case OpKind::AllToAll: return {all, all};
    case OpKind::Gather: return {block, rank == op.root ? all : 0};
    case OpKind::Scatter: return {rank == op.root ? all : 0, block};
    case OpKind::Send: return {block, 0};
    case OpKind::Recv: return {0, block};
    default: return {0, 0};
  }
}

// Whether `op`'s send and receive buffers share a byte on this rank (in
// place, in any of NCCL's in-place layouts).
inline bool buffersOverlap(const Op& op, const OpBufferBytes& bytes) {
  const auto* send = static_cast<const char*>(op.send);
  const auto* recv = static_cast<const char*>(op.recv);
  if (send == nullptr || recv == nullptr || bytes.send == 0 || bytes.recv == 0) return false;
  return std::less<const char*>()(send, recv + bytes.recv) &&
         std::less<const char*>()(recv, send + bytes.send);
}

// An Op with its buffers, count and type set (reduction, root and peer are
// the caller's to fill in).
inline Op makeOp(OpKind kind, const void* send, void* recv, std::size_t count, DataType type) {
  Op op;
  op.kind = kind;
  op.send = send;
  op.recv = recv;
  op.count = count;
  op.bytes = count * dataTypeSize(type);
  op.type = type;
  op.reduce.type = type;
  return op;
}

// An op of hora's C++ API: it completes before its call returns, or its
// Work finishes (completeOnReturn).
inline Op makeApiOp(OpKind kind, const void* send, void* recv, std::size_t count, DataType type) {
  Op op = makeOp(kind, send, recv, count, type);
  op.completeOnReturn = true;
  return op;
}

}  // namespace hora::core
