// RankSync for one rank per process (under hora-run): the values travel by
// an extra ncclAllReduce on the benchmark's own communicator.
#pragma once

#include "nccl.h"
#include "rank_sync.h"

namespace hora::perf {

// One rank per process, combined over its communicator.
class NcclRankSync final : public RankSync {
 public:
  NcclRankSync(ncclComm_t comm, int rank, int nranks);
  double combineSeconds(int participant, double seconds, AverageMode mode) override;
  long long sumCounts(int participant, long long count) override;
  void barrier(int participant) override;

 private:
  double allReduce(double value, ncclRedOp_t op);
  ncclComm_t comm_;
  int rank_;
  int nranks_;
};

}  // namespace hora::perf
