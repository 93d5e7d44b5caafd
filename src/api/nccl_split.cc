// ncclCommSplit and ncclCommShrink: new communicators made from one. Each
// call takes one of three courses:
// - at once: the call returns with the new communicator;
// - inside a group: the outermost ncclGroupEnd makes it, so that one
//   thread may split every rank's communicator;
// - on a non-blocking communicator (config.blocking = 0): the call returns
//   at once, as NCCL's, and the exchange over the parent and then the new
//   communicator's init go on on a thread of their own.
#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "api/comm_config.h"
#include "api/group.h"
#include "api/nccl_api.h"
#include "base/error.h"

using namespace hora;

namespace {

// The new communicator's mode: its own config's, or, without one, its
// parent's (NCCL copies the parent's config).
bool childNonBlocking(ncclComm_t parent, const ncclConfig_t* config) {
  return config != nullptr ? api::nonBlockingConfig(config) : api::isNonBlocking(parent);
}

// A communicator that `make` makes from `parent` at the outermost
// ncclGroupEnd; its handle now, pending until then (null where `handle`
// is false: a split this rank takes no part in). If the group fails, the
// handle reports why.
ncclComm_t makeAtGroupEnd(ncclComm_t parent, std::function<api::CommPtr()> make, bool handle, bool nonBlocking) {
  auto promise = std::make_shared<std::promise<api::CommPtr>>();
  std::shared_future<api::CommPtr> made = promise->get_future().share();
  api::deferToGroupEnd(
      parent,
      [promise, make] {
        try {
          promise->set_value(make());
        } catch (...) {
          promise->set_exception(std::current_exception());
          throw;
        }
      },
      [promise](std::exception_ptr why) { promise->set_exception(why); }, api::Background::Allowed);
  return handle ? api::wrapPending(std::move(made), nonBlocking) : nullptr;
}

using Exchange = std::function<std::optional<core::ChildPlan>(core::Communicator&)>;

// A split or shrink of a non-blocking communicator: `exchange` over
// `parent`, then the new communicator's init, on a thread of their own.
// The parent's handle reports the whole job, as NCCL's does (ncclInProgress
// until the new communicator is made; calls on it wait for that; a failure
// is its error from then on). The new handle, returned at once (none where
// `handle` is false), reports the init as a non-blocking init's does;
// ncclCommAbort of it returns at once, and the init does not start or is
// stopped (that is no failure of the parent's). ncclCommAbort of the
// parent while the job runs ends the exchange and the init alike.
ncclComm_t startOnItsOwnThread(ncclComm_t parentHandle, api::CommPtr parent, Exchange exchange, bool handle,
                               bool nonBlocking) {
  auto finished = std::make_shared<std::promise<void>>();
  auto made = std::make_shared<std::promise<api::CommPtr>>();
  auto initAbort = std::make_shared<std::atomic<bool>>(false);
  std::shared_future<void> job = finished->get_future().share();
  std::shared_future<api::CommPtr> making = made->get_future().share();
  std::thread([parent = std::move(parent), exchange = std::move(exchange), finished, made, initAbort]() mutable {
    const int rank = parent->rank();
    std::optional<core::ChildPlan> plan;
    try {
      plan = exchange(*parent);
    } catch (...) {
      parent.reset();  // before the job ends: then no call waits for a thread that holds the parent
      made->set_exception(std::current_exception());
      finished->set_exception(std::current_exception());
      return;
    }
    parent.reset();
    try {
      if (plan && initAbort->load())
        fail(ErrorKind::InvalidUsage, "rank ", rank,
             ": the new communicator was aborted (ncclCommAbort) before its init began");
      made->set_value(plan ? core::Communicator::makeChild(*plan, initAbort) : nullptr);
      finished->set_value();
    } catch (...) {
      made->set_exception(std::current_exception());
      if (initAbort->load()) finished->set_value();  // the program gave up on it
      else finished->set_exception(std::current_exception());
    }
  }).detach();
  api::setJob(parentHandle, std::move(job), [initAbort] { initAbort->store(true); });
  return handle ? api::wrapPending(std::move(making), nonBlocking, std::move(initAbort)) : nullptr;
}

}  // namespace

// As NCCL's, a split or shrink of a non-blocking communicator returns
// ncclSuccess at once (NCCL's group machinery says ncclInProgress only
// through ncclCommGetAsyncError); programs written for NCCL poll the
// parent's state, those written for PyTorch the new communicator's, and
// both work.
HORA_NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
              ncclConfig_t* config) {
  return api::guardedInGroup("ncclCommSplit", [&] {
    HORA_CHECK_ARG(newcomm != nullptr, "the output communicator pointer is NULL");
    *newcomm = nullptr;
    // As NCCL: a rank that takes no part makes no communicator, so its
    // config is not read.
    const bool takesPart = color != NCCL_SPLIT_NOCOLOR;
    if (takesPart) (void)api::effectiveConfig(config);
    const bool nonBlocking = takesPart && childNonBlocking(comm, config);
    if (api::inGroup()) {
      // A parent made in the same group may still be being made: then it
      // is taken at the group's end, once the group's inits are done.
      api::CommPtr parent = api::waitsForInit(comm) ? nullptr : api::checkComm(comm);
      *newcomm = makeAtGroupEnd(
          comm,
          [parent, comm, color, key] { return (parent ? parent : api::awaitInit(comm))->split(color, key); },
          takesPart, nonBlocking);
      return;
    }
    auto parent = api::checkComm(comm);
    if (api::isNonBlocking(comm)) {
      *newcomm = startOnItsOwnThread(
          comm, parent, [color, key](core::Communicator& c) { return c.planSplit(color, key); }, takesPart,
          nonBlocking);
    } else if (auto child = parent->split(color, key)) {
      *newcomm = api::wrapComm(std::move(child), nonBlocking);
    }
  });
}

HORA_NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
              ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return api::guardedInGroup("ncclCommShrink", [&] {
    HORA_CHECK_ARG(newcomm != nullptr, "the output communicator pointer is NULL");
    *newcomm = nullptr;
    // As NCCL: a shrink leaves out at least one rank (a copy of the whole
    // communicator is ncclCommSplit's).
    HORA_CHECK_ARG(excludeRanksCount > 0, "excludeRanksCount must be at least 1, got ", excludeRanksCount);
    HORA_CHECK_ARG(excludeRanksList != nullptr, "excludeRanksList is NULL with excludeRanksCount ",
                   excludeRanksCount);
    HORA_CHECK_ARG(shrinkFlags == NCCL_SHRINK_DEFAULT || shrinkFlags == NCCL_SHRINK_ABORT,
                   "shrinkFlags must be NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT, got ", shrinkFlags);
    (void)api::effectiveConfig(config);
    std::vector<int> excluded(excludeRanksList, excludeRanksList + excludeRanksCount);
    const bool abortFirst = shrinkFlags == NCCL_SHRINK_ABORT;
    // NCCL_SHRINK_ABORT stops the communicator before anything waits for
    // work still running on it (a non-blocking group or split), as NCCL
    // raises its abort flag first; a bad list leaves it as it was.
    if (api::CommPtr made = api::madeComm(comm); made && abortFirst) {
      made->checkExclusion(excluded);
      if (made->revocation() == core::Communicator::Revocation::None) made->revoke();
    }
    // A communicator whose split failed can still be shrunk: the way out.
    auto parent = api::checkComm(comm, api::JobFailure::Ignore);
    parent->checkExclusion(excluded);  // here, not on the thread: a bad list leaves the parent as it was
    const bool nonBlocking = childNonBlocking(comm, config);
    if (api::inGroup()) {
      *newcomm = makeAtGroupEnd(
          comm, [parent, excluded, abortFirst] { return parent->shrink(excluded, abortFirst); }, true, nonBlocking);
    } else if (api::isNonBlocking(comm)) {
      *newcomm = startOnItsOwnThread(
          comm, parent,
          [excluded, abortFirst](core::Communicator& c) -> std::optional<core::ChildPlan> {
            return c.planShrink(excluded, abortFirst);
          },
          true, nonBlocking);
    } else {
      *newcomm = api::wrapComm(parent->shrink(excluded, abortFirst), nonBlocking);
    }
  });
}
