#include "nccl_rank_sync.h"

#include <cstdint>

#include "nccl_failure.h"

namespace hora::perf {

NcclRankSync::NcclRankSync(ncclComm_t comm, int rank, int nranks)
    : comm_(comm), rank_(rank), nranks_(nranks) {}

double NcclRankSync::allReduce(double value, ncclRedOp_t op) {
  checkNccl(ncclAllReduce(&value, &value, 1, ncclFloat64, op, comm_, nullptr),
            "ncclAllReduce (result exchange)", rank_, comm_);
  return value;
}

double NcclRankSync::combineSeconds(int, double seconds, AverageMode mode) {
  switch (mode) {
    case AverageMode::Rank0: return allReduce(rank_ == 0 ? seconds : 0.0, ncclSum);
    case AverageMode::Min: return allReduce(seconds, ncclMin);
    case AverageMode::Max: return allReduce(seconds, ncclMax);
    case AverageMode::Mean: break;
  }
  return allReduce(seconds, ncclSum) / nranks_;
}

long long NcclRankSync::sumCounts(int, long long count) {
  std::int64_t value = count;
  checkNccl(ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comm_, nullptr),
            "ncclAllReduce (result exchange)", rank_, comm_);
  return value;
}

void NcclRankSync::barrier(int) { allReduce(0.0, ncclSum); }

}  // namespace hora::perf
