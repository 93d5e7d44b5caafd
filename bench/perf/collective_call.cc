#include "collective_call.h"

#include "nccl_failure.h"

namespace hora::perf {
namespace {

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
