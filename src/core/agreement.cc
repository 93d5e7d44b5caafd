#include "core/agreement.h"


namespace hora::core {

namespace {

// Reductions by the kind the kernels run: ncclAvg on floating types is a
// pre-multiplied sum, on integers a sum then a division.
const char* reductionName(kernels::ReduceKind kind) {
  switch (kind) {
    case kernels::ReduceKind::Sum: return "sum";
    case kernels::ReduceKind::Prod: return "prod";
    case kernels::ReduceKind::Max: return "max";
    case kernels::ReduceKind::Min: return "min";
    case kernels::ReduceKind::PreMulSum: return "premulsum (ncclAvg or ncclRedOpCreatePreMulSum)";
    case kernels::ReduceKind::SumPostDiv: return "avg";
  }
  return "?";
}

std::string describe(const OpDescriptor& d, bool asReceiver) {
  if (d.purpose != OpPurpose::ProgramCall) return strCat("call #", d.sequence, ": ", opPurposeName(d.purpose));
  if (d.isMessage())
    return strCat(asReceiver ? "ncclRecv" : "ncclSend", " #", d.sequence, " of ", d.count, " bytes",
                  d.tag != 0 ? strCat(" with tag ", d.tag) : std::string());
  std::string text = strCat("call #", d.sequence, ": ", opKindName(d.kind), " of ", d.count, " x ",
                            dataTypeName(d.type));
  if (reducingKind(d.kind)) text += strCat(" (", reductionName(d.reduction), ")");
  if (rootedKind(d.kind)) text += strCat(" with root ", d.root);
  if (d.windows) text += " on windows";
  return text;
}

// "count 2000 here, 1000 at rank 0; root ..." for every field that differs.
std::string collectiveDifferences(const OpDescriptor& mine, const OpDescriptor& theirs) {
  const std::string there = strCat(" at rank ", theirs.rank);
  if (mine.purpose != theirs.purpose) {
    const auto name = [](const OpDescriptor& d) {
      return d.purpose == OpPurpose::ProgramCall ? std::string(opKindName(d.kind)) : opPurposeName(d.purpose);
    };
    return strCat(name(mine), " here, ", name(theirs), there, " (every rank must make the same calls in the same "
                  "order: did a rank skip, add or reorder a call?)");
  }
  if (mine.kind != theirs.kind)
    return strCat("collective ", opKindName(mine.kind), " here, ", opKindName(theirs.kind), there,
                  " (did a rank skip, add or reorder a call?)");
  std::string text;
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : "; ") + part; };
  if (mine.count != theirs.count) add(strCat("count ", mine.count, " here, ", theirs.count, there));
  if (mine.type != theirs.type)
    add(strCat("datatype ", dataTypeName(mine.type), " here, ", dataTypeName(theirs.type), there));
  if (mine.reduction != theirs.reduction)
    add(strCat("op ", reductionName(mine.reduction), " here, ", reductionName(theirs.reduction), there));
  if (mine.root != theirs.root) add(strCat("root ", mine.root, " here, ", theirs.root, there));
  if (mine.sequence != theirs.sequence)
    add(strCat("call #", mine.sequence, " here, #", theirs.sequence, there,
               " (did a rank skip or add a call?)"));
  // The path follows from the fields above and this rank's windows: only
  // where the calls are otherwise the same is it the windows that differ.
  if (text.empty() && mine.windows != theirs.windows)
    add(strCat("the zero-copy path on windows ", mine.windows ? "here, not" : "not here, but", there,
               " (usable windows on one rank and not the other: ncclCommWindowRegister and "
               "ncclCommWindowDeregister must be made alike on every rank)"));
  return text;
}

std::string mismatchText(int rank, const std::string& peerName, const OpDescriptor& mine,
                         const OpDescriptor& theirs) {
  const std::string head = strCat("rank ", rank, ": ");
  const std::string details =
      strCat(" (this rank: ", describe(mine, true), "; rank ", theirs.rank, ": ", describe(theirs, false), ")");
  if (mine.isMessage() && theirs.isMessage()) {
    std::string what;
    auto add = [&](const std::string& part) { what += (what.empty() ? "" : "; ") + part; };
    if (mine.count != theirs.count)
      add(strCat("size ", mine.count, " bytes here, ", theirs.count, " bytes at rank ", theirs.rank,
                 " (a receive must be the same size as its send)"));
    if (mine.tag != theirs.tag)
      add(strCat("tag ", mine.tag, " here, ", theirs.tag, " at rank ", theirs.rank,
                 " (messages are taken in the order sent, not matched by tag: receive them in the order "
                 "they were sent)"));
    if (what.empty())
      what = strCat("message #", mine.sequence, " here, #", theirs.sequence, " at rank ", theirs.rank);
    return strCat(head, "point-to-point mismatch with rank ", theirs.rank, " on message #", mine.sequence,
                  " from ", peerName, ": ", what, details);
  }
  if (!mine.isMessage() && !theirs.isMessage())
    return strCat(head, "collective mismatch with rank ", theirs.rank, " on call #", mine.sequence, ": ",
                  collectiveDifferences(mine, theirs), details);
  return strCat(head, "operation mismatch with rank ", theirs.rank, ": this rank runs ",
                describe(mine, true), " where rank ", theirs.rank, " runs ", describe(theirs, false),
                " (did a rank skip, add or reorder a call?)");
}

}  // namespace

OpDescriptor fromStamp(const transport::OpStamp& stamp) {
  OpDescriptor d;
  d.sequence = stamp.words[0];
  d.count = stamp.words[1];
  const std::uint64_t w = stamp.words[2];
  d.kind = static_cast<OpKind>(w & 0xff);
  d.type = static_cast<DataType>((w >> kStampTypeShift) & 0xff);
  d.reduction = static_cast<kernels::ReduceKind>((w >> kStampReductionShift) & 0xff);
  d.windows = ((w >> kStampWindowsShift) & 1) != 0;
  d.purpose = static_cast<OpPurpose>((w >> kStampPurposeShift) & 0xf);
  const auto rootOrTag = static_cast<std::uint32_t>(w >> kStampRootShift);
  if (d.isMessage()) d.tag = static_cast<int>(rootOrTag);
  else d.root = static_cast<int>(rootOrTag) - 1;
  d.rank = static_cast<int>(static_cast<std::uint32_t>(stamp.words[3]));
  return d;
}

const char* opPurposeName(OpPurpose purpose) {
  switch (purpose) {
    case OpPurpose::ProgramCall: return "a collective";
    case OpPurpose::CommSplit: return "ncclCommSplit";
    case OpPurpose::WindowRegister: return "ncclCommWindowRegister";
    case OpPurpose::Barrier: return "barrier";
  }
  return "an unknown call";  // a stamp from a build that knows more
}

Error agreementError(int rank, const transport::StampMismatch& mismatch,
                     const std::optional<OpDescriptor>& current) {
  const std::string peer = mismatch.peer();
  if (mismatch.expected() && mismatch.arrived())
    return Error(ErrorKind::InvalidUsage,
                 mismatchText(rank, peer, fromStamp(*mismatch.expected()), fromStamp(*mismatch.arrived())));
  if (mismatch.arrived()) {
    const OpDescriptor theirs = fromStamp(*mismatch.arrived());
    return Error(ErrorKind::InvalidUsage,
                 strCat("rank ", rank, ": operation mismatch with rank ", theirs.rank, ": it began its ",
                        describe(theirs, false), " with an operation stamp where this rank expected ",
                        "none: this rank still expected bytes of ",
                        current ? describe(*current, current->isMessage()) : std::string("an earlier operation"),
                        " from it (the ranks disagree on that operation's size), or HORA_CHECK_AGREEMENT is "
                        "not set alike on every rank"));
  }
  const OpDescriptor mine = fromStamp(*mismatch.expected());
  return Error(ErrorKind::InvalidUsage,
               strCat("rank ", rank, ": operation mismatch with ", peer, ": where this rank's ",
                      describe(mine, mine.isMessage()),
                      " begins, that rank sent bytes without an operation stamp (more bytes of an earlier "
                      "operation than agreed, or HORA_CHECK_AGREEMENT not set alike on every rank)"));
}

}  // namespace hora::core
