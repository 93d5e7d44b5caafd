#include "api/group.h"

#include <algorithm>
#include <exception>
#include <functional>
#include <future>
#include <thread>
#include <utility>
#include <vector>

#include "core/self_messages.h"

namespace hora::api {

namespace {
struct Making {
  std::shared_future<CommPtr> communicator;
  std::shared_ptr<std::atomic<bool>> abortFlag;
};
struct Deferred {
  ncclComm_t comm;
  std::function<void()> work;
  std::function<void(std::exception_ptr)> cancel;
  Background background;
};
using GroupOps = std::vector<std::pair<std::shared_ptr<core::Communicator>, core::Op>>;
// A call issued on a communicator still being made (issueWhenMade).
struct Unmade {
  ncclComm_t handle;
  const char* function;
  OpMaker make;
};
struct GroupState {
  GroupOps ops;
  std::vector<Unmade> unmade;  // made into ops at the outermost ncclGroupEnd
  std::vector<Making> making;                                        // finishInGroupEnd
  std::vector<Deferred> deferred;                                   // deferToGroupEnd
  std::vector<ncclComm_t> handles;  // what ops and deferred work name, each once
  ncclResult_t error = ncclSuccess;
};
thread_local GroupState group;
// Apart from the rest, and constant-initialized: every call asks whether
// it is in a group, and a thread_local with a constructor is reached
// through a wrapper that checks it was made, one more look-up per call.
thread_local int groupDepthNow = 0;
}  // namespace

bool inGroup() { return groupDepthNow > 0; }
int groupDepth() { return groupDepthNow; }

void finishInGroupEnd(std::shared_future<CommPtr> making, std::shared_ptr<std::atomic<bool>> abortFlag) {
  group.making.push_back({std::move(making), std::move(abortFlag)});
}

namespace {
void noteHandle(ncclComm_t handle) {
  if (std::find(group.handles.begin(), group.handles.end(), handle) == group.handles.end())
    group.handles.push_back(handle);
}
}  // namespace

void deferToGroupEnd(ncclComm_t comm, std::function<void()> work, std::function<void(std::exception_ptr)> cancel,
                     Background background) {
  noteHandle(comm);
  group.deferred.push_back({comm, std::move(work), std::move(cancel), background});
}

void noteGroupError(ncclResult_t result) {
  if (inGroup() && group.error == ncclSuccess) group.error = result;
}

bool waitsForInit(ncclComm_t handle) {
  const bool waitsAlready = std::any_of(group.unmade.begin(), group.unmade.end(),
                                        [handle](const Unmade& call) { return call.handle == handle; });
  return waitsAlready || (!madeComm(handle) && inProgress(handle));
}

void deferUntilMade(ncclComm_t handle, const char* function, OpMaker make) {
  noteHandle(handle);
  group.unmade.push_back({handle, function, std::move(make)});
}

namespace {
// Adds `op` to a group's operations, its buffers checked first, as every
// argument: a call that fails leaves the communicator usable (outside a
// group execute() checks).
void queue(GroupOps& ops, const CommPtr& comm, const core::Op& op) {
  comm->checkBuffers(op);
  ops.emplace_back(comm, op);
}
}  // namespace

void issue(ncclComm_t handle, const CommPtr& comm, const core::Op& op) {
  if (inGroup()) {
    queue(group.ops, comm, op);
    noteHandle(handle);
    return;
  }
  comm->execute(op);
}

namespace {
// Adds `value` to `key`'s list, keys in the order they first came: a
// group's work per communicator, in issue order.
template <typename Key, typename Value>
void appendFor(std::vector<std::pair<Key, std::vector<Value>>>& perKey, const Key& key, Value value) {
  auto it = perKey.begin();
  while (it != perKey.end() && it->first != key) ++it;
  if (it == perKey.end()) it = perKey.insert(perKey.end(), {key, {}});
  it->second.push_back(std::move(value));
}

// Runs the deferred work: each communicator's in issue order, the first
// communicator's on this thread, the others' on threads of their own (the
// work is collective: one thread could not finish one rank's before it
// starts the next's).
void runDeferred(std::vector<Deferred> deferred) {
  std::vector<std::pair<ncclComm_t, std::vector<std::function<void()>>>> perComm;
  for (Deferred& item : deferred) appendFor(perComm, item.comm, std::move(item.work));
  auto runAll = [](const std::vector<std::function<void()>>& works) {
    for (const auto& work : works) work();
  };
  std::vector<std::future<void>> others;
  std::exception_ptr first;
  try {
    for (std::size_t i = 1; i < perComm.size(); ++i)
      others.push_back(std::async(std::launch::async, runAll, std::cref(perComm[i].second)));
    if (!perComm.empty()) runAll(perComm[0].second);
  } catch (...) {
    first = std::current_exception();
  }
  for (auto& other : others) {
    try {
      other.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

// A group's operations per communicator (in issue order), with the memory
// each communicator's share is on.
struct GroupPlan {
  std::vector<std::pair<std::shared_ptr<core::Communicator>, std::vector<core::Op>>> perComm;
  std::vector<core::MemoryKind> memory;
};

// Checks what every share needs before any starts: a communicator that
// cannot run fails the group before any other's part starts, so that none
// is left running, or waiting for this thread, after ncclGroupEnd returns.
GroupPlan planGroup(const GroupOps& ops) {
  GroupPlan plan;
  for (const auto& [comm, op] : ops) appendFor(plan.perComm, comm, op);
  for (auto& [comm, commOps] : plan.perComm) {
    comm->checkUsable();
    core::checkSelfMessagesPair(commOps, comm->rank());
    plan.memory.push_back(comm->checkedMemoryOf(commOps));
  }
  return plan;
}

bool isDevice(core::MemoryKind memory) { return memory == core::MemoryKind::Device; }

// Runs the collected operations: per communicator in issue order; the first
// communicator on this thread, the others on their worker threads.
void runGroup(GroupPlan plan) {
  auto& perComm = plan.perComm;
  if (perComm.empty()) return;
  // Collectives on device buffers only enqueue kernels: every
  // communicator's part is launched from this thread, as NCCL launches a
  // group, without waking a worker thread per communicator (their ring
  // launches interleaved in the order of their collectives, for ranks that
  // share a GPU: device/launch_order.h).
  if (std::all_of(plan.memory.begin(), plan.memory.end(), isDevice)) {
    std::vector<core::Communicator::DevicePart> parts;
    for (auto& [comm, commOps] : perComm) parts.push_back({comm.get(), commOps});
    core::Communicator::executeOnDevices(parts);
    return;
  }
  std::vector<std::shared_ptr<core::WorkState>> works;
  std::exception_ptr first;
  try {
    for (std::size_t i = 1; i < perComm.size(); ++i)
      works.push_back(perComm[i].first->submit(std::move(perComm[i].second), plan.memory[i]));
    perComm[0].first->execute(perComm[0].second, plan.memory[0]);
  } catch (...) {
    first = std::current_exception();
  }
  for (auto& work : works) {
    try {
      work->wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

// Whether the group may end on a thread of its own, as NCCL ends a group
// of non-blocking communicators: every communicator it names is
// non-blocking, it makes none in blocking mode, its deferred work may run
// on any thread, and its operations are on host buffers (device work only
// enqueues kernels, on the caller's device: that stays on this thread, and
// returns at once anyway).
bool endsInBackground(const std::vector<ncclComm_t>& handles, const std::vector<Making>& making,
                      const std::vector<Deferred>& deferred, const GroupPlan& plan) {
  if (handles.empty() || !making.empty()) return false;
  for (ncclComm_t handle : handles)
    if (!isNonBlocking(handle)) return false;
  for (const Deferred& item : deferred)
    if (item.background != Background::Allowed) return false;
  return std::none_of(plan.memory.begin(), plan.memory.end(), isDevice);
}

// Runs the group's deferred work and operations on a thread of their own;
// each handle's job until they end (ncclCommGetAsyncError: ncclInProgress;
// its calls wait; a failure is its error). ncclCommAbort of any of them
// aborts every communicator of the group, as NCCL's abort of a group job
// does, so that none is left waiting for a rank that stopped.
void endInBackground(const std::vector<ncclComm_t>& handles, std::vector<Deferred> deferred, GroupPlan plan) {
  std::vector<std::weak_ptr<core::Communicator>> members;
  for (auto& [comm, commOps] : plan.perComm) members.push_back(comm);
  for (ncclComm_t handle : handles)
    if (CommPtr made = madeComm(handle)) members.push_back(made);
  struct Work {
    std::vector<Deferred> deferred;
    GroupPlan plan;
    std::promise<void> finished;
  };
  auto work = std::make_shared<Work>(Work{std::move(deferred), std::move(plan), {}});
  std::shared_future<void> job = work->finished.get_future().share();
  for (ncclComm_t handle : handles)
    setJob(handle, job, [members] {
      for (const auto& member : members)
        if (CommPtr comm = member.lock()) comm->abort();
    });
  try {
    std::thread([work] {
      std::exception_ptr failure;
      try {
        runDeferred(std::exchange(work->deferred, {}));
        runGroup(std::exchange(work->plan, {}));
      } catch (...) {
        failure = std::current_exception();
      }
      // Before the job ends: then no destroy that waits for it returns
      // while this thread still holds a communicator.
      work->deferred.clear();
      work->plan = {};
      if (failure) work->finished.set_exception(failure);
      else work->finished.set_value();
    }).detach();
  } catch (...) {  // no thread: nothing ran, and the handles say why
    const std::exception_ptr why = std::current_exception();
    for (Deferred& item : work->deferred)
      if (item.cancel) item.cancel(why);
    work->finished.set_exception(why);
  }
}
}  // namespace

}  // namespace hora::api

using namespace hora;

HORA_NCCL_API(ncclResult_t, ncclGroupStart, void) {
  ++api::groupDepthNow;
  return ncclSuccess;
}

namespace hora::api {

ncclResult_t closeGroupLevel(const char* function, bool run) {
  if (groupDepthNow == 0) {
    reportError(strCat(function, ": called without a matching ncclGroupStart"));
    return ncclInvalidUsage;
  }
  if (--groupDepthNow > 0) return ncclSuccess;
  auto ops = std::exchange(group.ops, {});
  auto unmade = std::exchange(group.unmade, {});
  auto making = std::exchange(group.making, {});
  auto deferred = std::exchange(group.deferred, {});
  const auto handles = std::exchange(group.handles, {});
  const ncclResult_t refused = std::exchange(group.error, ncclSuccess);
  // Deferred work that will not run tells whoever waits for it why.
  auto cancelDeferred = [&](ncclResult_t why, const char* what) {
    const auto reason = std::make_exception_ptr(
        Error(why == ncclInvalidArgument ? ErrorKind::InvalidArgument : ErrorKind::InvalidUsage,
              strCat(function, ": not run: ", what)));
    for (Deferred& item : deferred)
      if (item.cancel) item.cancel(reason);
  };
  // A group with an argument error runs nothing, as NCCL's: communicators
  // it began making stop now instead of waiting for a peer that the
  // refused call would have made (their handles keep the error), and the
  // group fails with the refused call's error and text.
  if (refused != ncclSuccess) {
    for (auto& communicator : making) communicator.abortFlag->store(true);
    for (auto& communicator : making) communicator.communicator.wait();
    cancelDeferred(refused, "a call of its group was refused");
    return refused;
  }
  // Communicators made in the group are ready before its operations run;
  // one that failed fails the group (its handle keeps the error).
  const ncclResult_t made = guarded(function, [&] {
    std::exception_ptr first;
    for (auto& communicator : making) {
      try {
        communicator.communicator.get();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  });
  if (made != ncclSuccess || !run) {  // a communicator not made, or a simulated end: nothing runs
    if (made != ncclSuccess) cancelDeferred(made, "a communicator of its group was not made");
    else cancelDeferred(ncclInvalidUsage, "its group was ended by ncclGroupSimulateEnd");
    return made;
  }
  GroupPlan plan;
  bool background = false;
  const ncclResult_t checked = guarded(function, [&] {
    // Calls on communicators that were still being made, now that they are.
    for (Unmade& call : unmade) {
      const CommPtr comm = checkComm(call.handle);
      try {
        queue(ops, comm, call.make(comm));
      } catch (const Error& error) {
        throw Error(error.kind(), strCat(call.function, " (checked at the end of its group): ", error.what()),
                    error.failedRank());
      }
    }
    plan = planGroup(ops);
    background = endsInBackground(handles, making, deferred, plan);
  });
  if (checked != ncclSuccess) {
    cancelDeferred(checked, "an operation of its group could not run");
    return checked;
  }
  if (background) {
    const ncclResult_t started =
        guarded(function, [&] { endInBackground(handles, std::move(deferred), std::move(plan)); });
    return started == ncclSuccess ? ncclInProgress : started;
  }
  return guarded(function, [&] {
    runDeferred(std::move(deferred));
    runGroup(std::move(plan));
  });
}

}  // namespace hora::api

HORA_NCCL_API(ncclResult_t, ncclGroupEnd, void) { return api::closeGroupLevel("ncclGroupEnd", true); }
