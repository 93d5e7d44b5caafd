// The measurement loop one thread runs for the ranks it drives: for every
// type, op, root and size, time the collective out of place and in place,
// check its results, and (on the printing thread) print the table rows.
#pragma once

#include <cstdio>
#include <functional>
#include <vector>

#include "data_check.h"
#include "options.h"
#include "rank_sync.h"

namespace hora::perf {

// The sizes of one type, op and root, in order: what -N repeats.
using StepSeries = std::vector<StepPlan>;

// The series of a run in the table's order: types, then ops, then roots.
// A size whose element counts round down to zero is measured as a call of
// count 0, and printed, as nccl-tests does.
std::vector<StepSeries> planSeries(const Options& options, int nranks);

// Every measurement of a run, in the order they are made: each series
// options.runCycles times over (once for 0, which runBenchmark repeats
// until the process is interrupted).
std::vector<StepPlan> planSteps(const Options& options, int nranks);

struct LocalRank {
  int rank = 0;
  RankBuffers buffers;  // where inputs are written and results read
  // Where the collective's buffers are device memory: copy the first
  // `bytes` of `buffers` to them before a checked call, and back after.
  // Empty for host memory.
  std::function<void(std::size_t bytes)> upload;
  std::function<void(std::size_t bytes)> download;
};

// Runs the collective `calls` times for every rank in `ranks` of the
// thread (one NCCL group when there are several calls or ranks). On host
// memory it returns when the results are in place; on device memory once
// the calls are enqueued.
using LaunchFunction = std::function<void(const StepPlan& plan, bool inPlace, int calls)>;

struct BenchmarkThread {
  const Options* options = nullptr;
  int nranks = 1;
  int participant = 0;           // index of this thread in `sync`
  std::vector<LocalRank> ranks;  // the ranks this thread drives
  RankSync* sync = nullptr;
  LaunchFunction launch;
  // Returns when every call launched so far has completed (device memory:
  // the ranks' streams have run, as nccl-tests waits after its timed
  // loop). Empty when `launch` itself returns on completion.
  std::function<void()> complete;
  std::FILE* out = nullptr;  // set on the one thread that prints the table
};

struct BenchmarkTotals {
  long long wrongElements = 0;  // over all ranks, sizes and places
  // nccl-tests' "Out of bounds values": over every size and place, the
  // checks in which a thread found a wrong element, one per such thread.
  long long failedChecks = 0;
  double busbwSum = 0;          // over every measured result
  int results = 0;
  double averageBusbw() const { return results > 0 ? busbwSum / results : 0.0; }
};

BenchmarkTotals runBenchmark(const BenchmarkThread& thread);

}  // namespace hora::perf
