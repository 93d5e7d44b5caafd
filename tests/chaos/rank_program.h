// What one rank process of a chaos trial does: joins the communicator at
// 127.0.0.1:port, runs the trial's calls and checks every result that
// comes back successful, and reports to the parent (support/child_process.h):
//   joining, ready, running, destroying, done   the phases reached
//   wrong                                       a result that differs (a detail)
//   error_result, error_text, error_ns          its first error, and when
//                                               (CLOCK_MONOTONIC ns)
//   abort_ns                                    when it aborted (abort trials)
#pragma once

#include "support/child_process.h"
#include "trial_plan.h"

namespace hora::chaos {

// Nanoseconds on CLOCK_MONOTONIC, which every process of the host shares.
long long monotonicNanoseconds();

int runRank(test_support::Reporter& reporter, const TrialPlan& plan, int rank, int port);

}  // namespace hora::chaos
