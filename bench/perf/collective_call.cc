#include "collective_call.h"

#include "data_types.h"
#include "nccl_failure.h"

namespace hora::perf {
namespace {

// In place, nccl-tests' alltoall_perf: a group of a send and a receive per
// peer on the one buffer (NCCL refuses an in-place ncclAlltoAll). The
// result is not defined, as a rank overwrites pieces it has yet to send;
// the time is what nccl-tests prints and averages.
void alltoallBySendsAndReceives(const StepPlan& plan, const CallPointers& call, const NcclRank& local) {
  const std::size_t count = plan.sizing.paramCount;
  const std::size_t pieceBytes = count * dataTypeInfo(plan.type).size;
  checkNccl(ncclGroupStart(), "ncclGroupStart", local.rank, local.comm);
  for (int peer = 0; peer < plan.nranks; ++peer) {
    const std::size_t at = static_cast<std::size_t>(peer) * pieceBytes;
    checkNccl(ncclSend(static_cast<const char*>(call.send) + at, count, plan.type, peer, local.comm, local.stream),
              "ncclSend", local.rank, local.comm);
    checkNccl(ncclRecv(static_cast<char*>(call.recv) + at, count, plan.type, peer, local.comm, local.stream),
              "ncclRecv", local.rank, local.comm);
  }
  checkNccl(ncclGroupEnd(), "ncclGroupEnd", local.rank, local.comm);
}

void issue(const StepPlan& plan, bool inPlace, const NcclRank& local) {
  const CallPointers call = callPointers(plan, local.rank, inPlace, local.buffers);
  const std::size_t count = plan.sizing.paramCount;
  const ncclRedOp_t op = plan.op.value_or(ncclSum);
  const int n = plan.nranks;
  cudaStream_t stream = local.stream;
  switch (plan.collective) {
    case Collective::AllReduce:
      return checkNccl(ncclAllReduce(call.send, call.recv, count, plan.type, op, local.comm, stream),
                       "ncclAllReduce", local.rank, local.comm);
    case Collective::ReduceScatter:
      return checkNccl(ncclReduceScatter(call.send, call.recv, count, plan.type, op, local.comm, stream),
                       "ncclReduceScatter", local.rank, local.comm);
    case Collective::AllGather:
      return checkNccl(ncclAllGather(call.send, call.recv, count, plan.type, local.comm, stream),
                       "ncclAllGather", local.rank, local.comm);
    case Collective::Broadcast:
      return checkNccl(
          ncclBroadcast(call.send, call.recv, count, plan.type, plan.root, local.comm, stream),
          "ncclBroadcast", local.rank, local.comm);
    case Collective::Reduce:
      return checkNccl(
          ncclReduce(call.send, call.recv, count, plan.type, op, plan.root, local.comm, stream),
          "ncclReduce", local.rank, local.comm);
    case Collective::SendRecv:
      checkNccl(ncclSend(call.send, count, plan.type, (local.rank + 1) % n, local.comm, stream),
                "ncclSend", local.rank, local.comm);
      return checkNccl(ncclRecv(call.recv, count, plan.type, (local.rank - 1 + n) % n, local.comm, stream),
                       "ncclRecv", local.rank, local.comm);
    case Collective::AlltoAll:
      if (inPlace) return alltoallBySendsAndReceives(plan, call, local);
      return checkNccl(ncclAlltoAll(call.send, call.recv, count, plan.type, local.comm, stream),
                       "ncclAlltoAll", local.rank, local.comm);
    case Collective::Gather:
      return checkNccl(ncclGather(call.send, call.recv, count, plan.type, plan.root, local.comm, stream),
                       "ncclGather", local.rank, local.comm);
    case Collective::Scatter:
      return checkNccl(ncclScatter(call.send, call.recv, count, plan.type, plan.root, local.comm, stream),
                       "ncclScatter", local.rank, local.comm);
  }
}

}  // namespace

void launchCollective(const StepPlan& plan, bool inPlace, std::span<const NcclRank> ranks, int calls) {
  const bool grouped = ranks.size() > 1 || calls > 1 || plan.collective == Collective::SendRecv;
  const int firstRank = ranks.empty() ? -1 : ranks.front().rank;
  if (grouped) checkNccl(ncclGroupStart(), "ncclGroupStart", firstRank, nullptr);
  for (const NcclRank& local : ranks)
    for (int call = 0; call < calls; ++call) issue(plan, inPlace, local);
  if (grouped) checkNccl(ncclGroupEnd(), "ncclGroupEnd", firstRank, ranks.front().comm);
}

}  // namespace hora::perf
