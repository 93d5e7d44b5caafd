// Combining one number from every rank of the job: the reported time (per
// -a) and the count of wrong elements. In threads mode the threads of this
// process meet at a barrier (ThreadRankSync, here); under hora-run each
// process is one rank and the values travel by an extra ncclAllReduce, as
// nccl-tests does with MPI (NcclRankSync, nccl_rank_sync.h).
#pragma once

#include <barrier>
#include <vector>

#include "options.h"

namespace hora::perf {

class RankSync {
 public:
  virtual ~RankSync() = default;
  // Every participant calls each method in the same order; all get the
  // combined value. `participant` is the calling thread's index.
  virtual double combineSeconds(int participant, double seconds, AverageMode mode) = 0;
  virtual long long sumCounts(int participant, long long count) = 0;
  // Returns once every participant has called it.
  virtual void barrier(int participant) = 0;
};

// The threads of one process; thread 0 drives rank 0.
class ThreadRankSync final : public RankSync {
 public:
  explicit ThreadRankSync(int threads);
  double combineSeconds(int participant, double seconds, AverageMode mode) override;
  long long sumCounts(int participant, long long count) override;
  void barrier(int participant) override;

 private:
  std::vector<double> slots_;
  std::barrier<> barrier_;
};

// How `mode` combines per-rank times (index 0 is rank 0's).
double combineTimes(const std::vector<double>& seconds, AverageMode mode);

}  // namespace hora::perf
