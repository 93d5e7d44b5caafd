#include "collective_call.h"

#include "nccl_failure.h"

namespace hora::perf {
namespace {

// Host buffers: the library runs the collective on its own threads and
// needs no stream.
constexpr cudaStream_t kNoStream = nullptr;

void issue(const StepPlan& plan, bool inPlace, const NcclRank& local) {
  const CallPointers call = callPointers(plan, local.rank, inPlace, local.buffers);
  const std::size_t count = plan.sizing.paramCount;
  const ncclRedOp_t op = plan.op.value_or(ncclSum);
  const int n = plan.nranks;
  switch (plan.collective) {
    case Collective::AllReduce:
      return checkNccl(ncclAllReduce(call.send, call.recv, count, plan.type, op, local.comm, kNoStream),
                       "ncclAllReduce", local.rank, local.comm);
    case Collective::ReduceScatter:
      return checkNccl(ncclReduceScatter(call.send, call.recv, count, plan.type, op, local.comm, kNoStream),
                       "ncclReduceScatter", local.rank, local.comm);
    case Collective::AllGather:
      return checkNccl(ncclAllGather(call.send, call.recv, count, plan.type, local.comm, kNoStream),
                       "ncclAllGather", local.rank, local.comm);
    case Collective::Broadcast:
      return checkNccl(
          ncclBroadcast(call.send, call.recv, count, plan.type, plan.root, local.comm, kNoStream),
          "ncclBroadcast", local.rank, local.comm);
    case Collective::Reduce:
      return checkNccl(
          ncclReduce(call.send, call.recv, count, plan.type, op, plan.root, local.comm, kNoStream),
          "ncclReduce", local.rank, local.comm);
    case Collective::SendRecv:
      checkNccl(ncclSend(call.send, count, plan.type, (local.rank + 1) % n, local.comm, kNoStream),
                "ncclSend", local.rank, local.comm);
      return checkNccl(ncclRecv(call.recv, count, plan.type, (local.rank - 1 + n) % n, local.comm, kNoStream),
                       "ncclRecv", local.rank, local.comm);
    case Collective::AlltoAll:
      return checkNccl(ncclAlltoAll(call.send, call.recv, count, plan.type, local.comm, kNoStream),
                       "ncclAlltoAll", local.rank, local.comm);
  }
}

}  // namespace

void launchCollective(const StepPlan& plan, bool inPlace, std::span<const NcclRank> ranks) {
  const bool grouped = ranks.size() > 1 || plan.collective == Collective::SendRecv;
  const int firstRank = ranks.empty() ? -1 : ranks.front().rank;
  if (grouped) checkNccl(ncclGroupStart(), "ncclGroupStart", firstRank, nullptr);
  for (const NcclRank& local : ranks) issue(plan, inPlace, local);
  if (grouped) checkNccl(ncclGroupEnd(), "ncclGroupEnd", firstRank, ranks.front().comm);
}

}  // namespace hora::perf
