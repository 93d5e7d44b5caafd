#include "core/buffer_layout.h"

#include <cstddef>
#include <cstdint>

#include "base/error.h"

namespace hora::core {

namespace {

// In place: the receive buffer starts this many bytes after the send
// buffer (negative: before it), and the text that says so.
struct InPlaceLayout {
  bool exists;
  std::ptrdiff_t recvMinusSend;
  const char* text;
};

InPlaceLayout inPlaceLayout(const Op& op, int rank) {
  const auto block = [&](int r) { return static_cast<std::ptrdiff_t>(op.bytes) * r; };
  switch (op.kind) {
    case OpKind::AllReduce:
    case OpKind::Reduce:
    case OpKind::Broadcast: return {true, 0, "the receive buffer must be the send buffer"};
    case OpKind::ReduceScatter:
      return {true, block(rank), "the receive buffer must be block `rank` of the send buffer"};
    case OpKind::AllGather:
      return {true, -block(rank), "the send buffer must be block `rank` of the receive buffer"};
    case OpKind::Gather:
      return {true, -block(op.root), "the send buffer must be block `root` of the receive buffer"};
    case OpKind::Scatter:
      return {true, block(op.root), "the receive buffer must be block `root` of the send buffer"};
    default: return {false, 0, "this collective has no in-place form"};
  }
}

}  // namespace

void checkBufferOverlap(const Op& op, int rank, int nranks) {
  if (op.isPointToPoint()) return;
  if (!buffersOverlap(op, opBufferBytes(op, rank, nranks))) return;
  const InPlaceLayout layout = inPlaceLayout(op, rank);
  const auto send = reinterpret_cast<std::ptrdiff_t>(op.send);
  const auto recv = reinterpret_cast<std::ptrdiff_t>(op.recv);
  if (layout.exists && recv - send == layout.recvMinusSend) return;
  fail(ErrorKind::InvalidArgument, "rank ", rank, ": the ", opKindName(op.kind),
       "'s send and receive buffers overlap, but not in place (", layout.text, ")");
}

// A buffer of elements starts at a multiple of the element size, as C and
// CUDA require of a typed pointer (a GPU faults on a misaligned float).
// hora's schedules slice buffers and reduce them element by element, so
// it is refused where the call enters, before any rank moves a byte; a
// rank's unused buffers (a reduce's output off the root) are not looked at.
void checkBufferAlignment(const Op& op, int rank, int nranks) {
  const std::size_t element = dataTypeSize(op.type);
  const OpBufferBytes bytes = opBufferBytes(op, rank, nranks);
  const auto check = [&](const void* buffer, std::size_t used, const char* name) {
    // Element sizes are powers of two: a mask, not a division.
    if (used == 0 || (reinterpret_cast<std::uintptr_t>(buffer) & (element - 1)) == 0) return;
    fail(ErrorKind::InvalidArgument, "rank ", rank, ": the ", opKindName(op.kind), "'s ", name, " buffer ", buffer,
         " is not aligned to its ", element, "-byte ", dataTypeName(op.type),
         " elements (a buffer must start at a multiple of its element size)");
  };
  check(op.send, bytes.send, "send");
  check(op.recv, bytes.recv, "receive");
}

}  // namespace hora::core
