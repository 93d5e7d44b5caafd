// Reducer scenarios that every rank of a group runs, with GoogleTest
// assertions. The same scenarios run over the in-process fake (threads), over
// real hora communicators on threads, and in processes under hora-run.
#pragma once

#include <functional>
#include <memory>

#include "hora/ddp/process_group.h"

namespace hora::ddp::testing {

using GroupPtr = std::shared_ptr<ProcessGroup>;

// Rank 0's parameter values reach every rank; over three steps every
// gradient ends as the mean of the ranks' gradients (float and double
// parameters, several buckets), whatever order ranks mark gradients in.
void expectBroadcastAndAveraging(const GroupPtr& group);

// Under noSync() steps keep local gradients; the next synchronised step
// reduces the accumulated sum.
void expectNoSyncAccumulation(const GroupPtr& group);

// A custom hook sees each bucket once per step, in order, holding this
// rank's own gradients; the Float16 and Bfloat16 compression hooks give the
// mean to their precision.
void expectHooks(const GroupPtr& group);

// Half and bfloat16 parameters: 16-bit buckets are scaled and reduced in place.
void expectSixteenBitBuckets(const GroupPtr& group);

// Usage errors name the rank and the parameter, and leave the Reducer usable:
// a gradient marked twice, finish() with gradients missing, registering
// after the first step.
void expectUsageErrors(const GroupPtr& group);

// The last rank registers one parameter more: every rank's constructor throws
// InvalidUsage naming that rank. Needs at least 2 ranks.
void expectLayoutMismatchDetected(const GroupPtr& group);

// The last rank calls `leave` (its communication ends) instead of the step;
// the others' finish() throws hora::Error(Remote) naming the rank and the
// bucket, within `limit`. Needs at least 2 ranks.
void expectFailureWhenARankLeaves(const GroupPtr& group, const std::function<void()>& leave,
                                  std::chrono::seconds limit);

// The last rank's hook throws for bucket 0 before it issues anything: no
// rank's finish() succeeds (the others' buckets would otherwise pair with
// the failing rank's next ones), the others' errors name that rank as the
// one that failed, all within `limit`, and later calls are refused on
// every rank. Needs at least 2 ranks.
void expectAHookFailingOnOneRankFailsEveryRank(Communicator& communicator, std::chrono::seconds limit);

// The last rank calls `leave` after constructing its Reducer; the others'
// step fails naming it, they shrink the communicator past it
// (Communicator::shrink), hand the result to Reducer::continueWith, and
// average correctly over themselves for at least two more steps, and for
// at least `goOnFor` (a job that goes on training). Needs at least 2 ranks.
void expectSurvivorsGoOnWhenARankLeaves(Communicator& communicator, const std::function<void()>& leave,
                                        std::chrono::milliseconds goOnFor = std::chrono::milliseconds(0));

}  // namespace hora::ddp::testing
