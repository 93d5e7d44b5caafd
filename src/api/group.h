// ncclGroupStart/End: operations issued between them are collected on the
// issuing thread and run together at the outermost ncclGroupEnd, each
// communicator's share on its own thread, so one thread can drive every rank
// of a process. A group of non-blocking communicators (config.blocking = 0)
// only, on host buffers, runs on a thread of its own, as NCCL's: its
// ncclGroupEnd returns ncclInProgress, and each communicator reports the
// group's work as its job (ncclComm::job).
#pragma once

#include <atomic>
#include <functional>
#include <future>
#include <memory>

#include "api/nccl_api.h"
#include "core/op.h"

namespace hora::api {

// Runs `op` on `comm`, the communicator behind `handle`, now, or queues it
// if this thread is inside a group.
void issue(ncclComm_t handle, const CommPtr& comm, const core::Op& op);
bool inGroup();
// A call's operation, made (its arguments checked against the
// communicator) once the communicator behind the handle exists.
using OpMaker = std::function<core::Op(const CommPtr&)>;
// Inside a group: whether a call on `handle` must wait for the group's end
// to be made (deferUntilMade), because the communicator's init still runs.
bool waitsForInit(ncclComm_t handle);
void deferUntilMade(ncclComm_t handle, const char* function, OpMaker make);
// issue() of the operation `make` returns. Inside a group, a communicator
// whose init still runs (made in the same group, by a thread that has the
// other ranks' inits still to issue) is not waited for: the call is
// checked and queued by the outermost ncclGroupEnd once the group's inits
// are done, as NCCL's are (an argument error then fails the group, naming
// `function`). Once one call of the group on a handle waits so, the later
// ones do too, so that its operations keep their order. (A template: the
// common path makes no std::function.)
template <typename Make>
void issueWhenMade(ncclComm_t handle, const char* function, Make&& make) {
  if (inGroup() && waitsForInit(handle)) return deferUntilMade(handle, function, OpMaker(std::forward<Make>(make)));
  const CommPtr comm = checkComm(handle);
  issue(handle, comm, make(comm));
}
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
// A communicator being initialised inside a group (on a thread of its own):
// the outermost ncclGroupEnd waits for it and fails with its error. Where
// the group failed already (an argument error in it), `abortFlag` stops the
// init at once: its peers may never come.
void finishInGroupEnd(std::shared_future<CommPtr> making, std::shared_ptr<std::atomic<bool>> abortFlag);
// Work that is collective over communicator `comm` issued inside a group (a
// window registration, a split, a shrink): the outermost ncclGroupEnd runs
// it, after the group's inits are done and before its operations, unless
// the group failed; then `cancel`, when given, is told why instead, so that
// nothing waits for work that will not run. One thread may so drive every
// rank: each communicator's work runs in issue order, the communicators'
// at once. The caller checks the arguments first, as for any call in a
// group: a refused call fails the group and nothing in it runs. Work that
// may run on any thread (`Background::Allowed`, not waiting for `comm`'s
// handle) lets a group of non-blocking communicators end in the background.
enum class Background { Allowed, NotAllowed };
void deferToGroupEnd(ncclComm_t comm, std::function<void()> work,
                     std::function<void(std::exception_ptr)> cancel = {},
                     Background background = Background::NotAllowed);
// Closes one level of this thread's group; at the outermost, runs what it
// collected (run), or drops it (ncclGroupSimulateEnd), and returns what
// `function` (the entry point) returns.
ncclResult_t closeGroupLevel(const char* function, bool run);

}  // namespace hora::api
