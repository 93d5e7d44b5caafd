// ncclGroupStart/End: operations issued between them are collected on the
// issuing thread and run together at the outermost ncclGroupEnd, each
// communicator's share on its own thread, so one thread can drive every rank
// of a process.
#pragma once

#include "api/nccl_api.h"
#include "core/op.h"

namespace hora::api {

// Runs `op` now, or queues it if this thread is inside a group.
void issue(const CommPtr& comm, const core::Op& op);
bool inGroup();
int groupDepth();  // nested ncclGroupStart calls not ended yet on this thread
// Remembers an argument error inside a group: ncclGroupEnd reports it.
void noteGroupError(ncclResult_t result);
// guarded(), and inside a group an error also fails the group's
// ncclGroupEnd (as NCCL's calls do, collectives and inits alike).
template <typename Body>
ncclResult_t guardedInGroup(const char* function, Body&& body) {
  const ncclResult_t result = guarded(function, body);
  if (result != ncclSuccess) noteGroupError(result);
  return result;
}
// A communicator being made inside a group (init or split, on a thread of
// its own): the outermost ncclGroupEnd waits for it and fails with its
// error.
void finishInGroupEnd(std::shared_future<CommPtr> making);
// Closes one level of this thread's group; at the outermost, runs what it
// collected (run), or drops it (ncclGroupSimulateEnd), and returns what
// `function` (the entry point) returns.
ncclResult_t closeGroupLevel(const char* function, bool run);

}  // namespace hora::api
