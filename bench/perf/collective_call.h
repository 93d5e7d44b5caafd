// The NCCL calls themselves: one collective for every rank a thread drives.
#pragma once

#include <span>

#include "data_check.h"
#include "nccl.h"

namespace hora::perf {

struct NcclRank {
  int rank = 0;
  ncclComm_t comm = nullptr;
  RankBuffers buffers;
  // The rank's stream for device buffers; none for host buffers, whose
  // collectives the library runs on its own threads.
  cudaStream_t stream = nullptr;
};

// Issues the collective of `plan` `calls` times for each rank in `ranks`
// (rank after rank), inside one ncclGroupStart/End when there are several
// calls or ranks (or for sendrecv, whose send and receive must be
// grouped). On host buffers it returns when the collectives completed; on
// device buffers once they are enqueued. On failure, reports the rank and
// the error and ends the process.
void launchCollective(const StepPlan& plan, bool inPlace, std::span<const NcclRank> ranks, int calls = 1);

}  // namespace hora::perf
