// The agreement check: ranks that disagree on an operation stop with an
// error naming both ranks, the field and both values, before either uses
// the other's data.
//
// Every operation stamps each connection it uses (transport/op_stamp.h)
// with what the receiving end must agree on: which call it is, its kind,
// count, element type, reduction and root for a collective; which message
// it is and its size for a point-to-point message. The stamp rides on
// bytes that move anyway (a 30-bit check in a shared-memory slot's size
// word, a TCP frame in the same send()), so the check costs no message of
// its own. The receiving connection compares it with its own stamp before
// it hands out any byte of the operation; this file fills stamps and words
// the error.
//
// Disagreements the stamps reveal: a different count, type, reduction,
// root or collective; a call one rank skipped or added (the call numbers
// or kinds then differ at the next call that meets); a receive whose size
// is not its send's. HORA_CHECK_AGREEMENT=0 turns the check off for
// collectives (point-to-point sizes are always checked: NCCL requires them
// to match, and hora has always refused a mismatch).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/op.h"
#include "transport/op_stamp.h"

namespace hora::core {

struct OpDescriptor {
  OpKind kind = OpKind::AllReduce;  // Send for a message, at both ends
  // Collectives: the call's number on this communicator, counted from 1,
  // alike on every rank that made the same calls. Messages: the message's
  // number from its sender to its receiver, counted from 1.
  std::uint64_t sequence = 0;
  std::uint64_t count = 0;  // elements (per rank or block, as in Op); a message: bytes
  DataType type = DataType::Uint8;
  kernels::ReduceKind reduction = kernels::ReduceKind::Sum;  // reducing collectives only
  int root = -1;                                             // rooted collectives only
  int tag = 0;                                               // messages only
  // Collectives: the zero-copy path on windows (the plan decides it from
  // this rank's windows, and deregistering is local, so ranks can differ).
  bool windows = false;
  int rank = -1;  // who made the stamp (not compared)
  // The call a collective opens (op.h), where it is not the program's own.
  OpPurpose purpose = OpPurpose::ProgramCall;

  bool isMessage() const { return kind == OpKind::Send; }
};

// Which kinds use a reduction and a root: bit sets over OpKind, so that
// stamping a collective tests a bit instead of comparing kinds.
constexpr unsigned kindBit(OpKind kind) { return 1u << static_cast<unsigned>(kind); }
inline constexpr unsigned kReducingKinds =
    kindBit(OpKind::AllReduce) | kindBit(OpKind::ReduceScatter) | kindBit(OpKind::Reduce);
inline constexpr unsigned kRootedKinds = kindBit(OpKind::Broadcast) | kindBit(OpKind::Reduce) |
                                         kindBit(OpKind::Gather) | kindBit(OpKind::Scatter);
inline bool reducingKind(OpKind kind) { return (kReducingKinds & kindBit(kind)) != 0; }
inline bool rootedKind(OpKind kind) { return (kRootedKinds & kindBit(kind)) != 0; }

// The descriptor of collective `op`, call number `sequence` on `rank`.
inline OpDescriptor collectiveDescriptor(const Op& op, std::uint64_t sequence, int rank,
                                         bool windows = false) {
  OpDescriptor d;
  d.kind = op.kind;
  d.sequence = sequence;
  d.count = op.count;
  d.type = op.type;
  d.reduction = reducingKind(op.kind) ? op.reduce.kind : kernels::ReduceKind::Sum;
  d.root = rootedKind(op.kind) ? op.root : -1;
  d.windows = windows;
  d.rank = rank;
  d.purpose = op.purpose;
  return d;
}

// The descriptor of message number `sequence` of `bytes` bytes with
// `tag`, made by `rank`: both ends of a message describe it alike (a
// receive names its own size and tag).
inline OpDescriptor messageDescriptor(std::size_t bytes, std::uint64_t sequence, int rank, int tag) {
  OpDescriptor d;
  d.kind = OpKind::Send;
  d.sequence = sequence;
  d.count = bytes;
  d.rank = rank;
  d.tag = tag;
  return d;
}

// Word 2 of a stamp: kind, type and reduction (8 bits each), the windows
// flag (1 bit), the purpose (4 bits) and root (+1, so that none is 0), or
// a message's tag (as it is: tag 0 gives the bits a message always had).
inline constexpr int kStampTypeShift = 8, kStampReductionShift = 16, kStampWindowsShift = 24,
                     kStampPurposeShift = 28, kStampRootShift = 32;

// Inline, with the descriptors above: the executor stamps every operation,
// and the stamp of one should cost a few instructions.
inline transport::OpStamp toStamp(const OpDescriptor& d) {
  transport::OpStamp stamp;
  stamp.words[0] = d.sequence;
  stamp.words[1] = d.count;
  stamp.words[2] = static_cast<std::uint64_t>(d.kind) |
                   static_cast<std::uint64_t>(d.type) << kStampTypeShift |
                   static_cast<std::uint64_t>(d.reduction) << kStampReductionShift |
                   static_cast<std::uint64_t>(d.windows) << kStampWindowsShift |
                   static_cast<std::uint64_t>(d.purpose) << kStampPurposeShift |
                   static_cast<std::uint64_t>(d.isMessage() ? static_cast<std::uint32_t>(d.tag)
                                                            : static_cast<std::uint32_t>(d.root + 1))
                       << kStampRootShift;
  stamp.words[3] = static_cast<std::uint32_t>(d.rank);
  return stamp.seal();
}

// The stamp of collective `op`, call number `sequence` on `rank` (inlined,
// the descriptor is never built in memory).
inline transport::OpStamp collectiveStamp(const Op& op, std::uint64_t sequence, int rank,
                                          bool windows = false) {
  return toStamp(collectiveDescriptor(op, sequence, rank, windows));
}

OpDescriptor fromStamp(const transport::OpStamp& stamp);

// "ncclCommSplit": the call an operation of `purpose` opens.
const char* opPurposeName(OpPurpose purpose);

// The InvalidUsage error of rank `rank` for a mismatch its connection from
// `peerName` found (transport::StampMismatch); `current` is the operation
// this rank runs, for a mismatch that came without a stamp of this rank's.
Error agreementError(int rank, const transport::StampMismatch& mismatch,
                     const std::optional<OpDescriptor>& current);

}  // namespace hora::core
