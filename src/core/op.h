// One operation as the executors see it: API calls become Ops, groups become
// lists of Ops.
#pragma once

#include <cstddef>
#include <string>

#include "hora/types.h"
#include "kernels/reduce_host.h"

namespace hora::core {

enum class OpKind { AllReduce, ReduceScatter, AllGather, Broadcast, Reduce, Send, Recv };

const char* opKindName(OpKind kind);

struct Op {
  OpKind kind = OpKind::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  // Elements: per rank for ReduceScatter (recvcount) and AllGather (sendcount).
  std::size_t count = 0;
  DataType type = DataType::Float32;
  kernels::ReduceSpec reduce;
  int root = -1;  // Broadcast, Reduce
  int peer = -1;  // Send, Recv

  bool isPointToPoint() const { return kind == OpKind::Send || kind == OpKind::Recv; }
};

// An Op with its buffers, count and type set (reduction, root and peer are
// the caller's to fill in).
inline Op makeOp(OpKind kind, const void* send, void* recv, std::size_t count, DataType type) {
  Op op;
  op.kind = kind;
  op.send = send;
  op.recv = recv;
  op.count = count;
  op.type = type;
  op.reduce.type = type;
  return op;
}

}  // namespace hora::core
