// A reference implementation of every collective hora-perf measures, done
// directly on the host buffers of all ranks at once. Tests use it as a
// stand-in library: what it produces must check as correct, and what it
// produces with a deliberate fault must not.
#pragma once

#include <vector>

#include "data_check.h"

namespace hora::perf::testing {

// Runs `plan` for every rank (buffers[r] belongs to rank r) with the same
// pointer conventions as the NCCL calls (callPointers).
void runOnHost(const StepPlan& plan, bool inPlace, const std::vector<RankBuffers>& buffers);

}  // namespace hora::perf::testing
