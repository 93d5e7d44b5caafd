// The two ways hora-perf runs its ranks. Both print the table on rank 0 and
// return the process exit status (0, or kFailureExitStatus when a result
// was wrong).
#pragma once

#include "launch_environment.h"
#include "options.h"
#include "rank_placement.h"

namespace hora::perf {

// All options.ranksInProcess() ranks in this process: ncclCommInitAll, then
// options.threads threads, each driving options.ranksPerThread ranks.
// `placement` gives rank r's device, or none for host buffers.
int runRanksAsThreads(const Options& options, const RankPlacement& placement);

// This process is one rank of a job started by hora-run; `placement` holds
// its one device, or none.
int runAsProcessRank(const Options& options, const ProcessRank& process, const RankPlacement& placement);

}  // namespace hora::perf
