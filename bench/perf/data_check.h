// Where one rank's data lives for one measurement, how hora-perf fills it
// before a checked iteration, and how it counts wrong result elements after.
#pragma once

#include <cstddef>
#include <optional>

#include "collectives.h"
#include "nccl.h"
#include "value_model.h"

namespace hora::perf {

// Everything about one measurement that all ranks share.
struct StepPlan {
  Collective collective = Collective::AllReduce;
  ncclDataType_t type = ncclFloat32;
  std::optional<ncclRedOp_t> op;  // empty unless the collective reduces
  int root = -1;                  // -1 unless the collective is rooted
  int nranks = 1;
  CollectiveSizing sizing;
  // -u (nccl-tests' unalign): both buffers start this many elements past
  // the rank's allocation, so they are aligned to the element only.
  std::size_t unalignElements = 0;
};

// One rank's two buffers, each large enough for the largest measurement.
struct RankBuffers {
  void* send = nullptr;
  void* recv = nullptr;
};

// The pointers one rank passes to NCCL. In place, nccl-tests' convention:
//   all_gather      send = recv + rank * sendCount
//   reduce_scatter  recv = send + rank * recvCount (send is the receive buffer)
//   the others      send = recv
struct CallPointers {
  const void* send = nullptr;
  void* recv = nullptr;
};

// `allocated`: the rank's buffers as allocated; the pointers are
// plan.unalignElements past them (unalignedBuffers).
CallPointers callPointers(const StepPlan& plan, int rank, bool inPlace, const RankBuffers& allocated);
RankBuffers unalignedBuffers(const StepPlan& plan, const RankBuffers& allocated);

// Whether the result of this form of the collective is checked.
bool resultChecked(const StepPlan& plan, bool inPlace);

// Writes rank's inputs for repetition `rep` where the call will read them,
// and poisons the elements the call must write (see poisonBuffer).
void prepareInputs(const StepPlan& plan, const ValueModel& values, int rank, bool inPlace,
                   const RankBuffers& buffers, int rep);

// The number of elements of rank's result that differ from the expected
// ones. Off the root of a reduce or gather, the receive buffer must be as
// the call found it: the elements it changed.
long long countWrongElements(const StepPlan& plan, const ValueModel& values, int rank, bool inPlace,
                             const RankBuffers& buffers, int rep);

}  // namespace hora::perf
