// Shared pieces of the nccl.h implementation: the ncclComm handle, the
// exception-to-result-code boundary and the export macro.
#pragma once

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include "base/error.h"
#include "core/communicator.h"
#include "nccl.h"

// Defines ncclX (exported, weak, so a profiler may interpose it) and its
// alias pncclX, as NVIDIA's library exports both names.
#define HORA_NCCL_API(ret, name, ...)                                                     \
  extern "C" __attribute__((visibility("default"))) __attribute__((alias(#name))) ret p##name( \
      __VA_ARGS__);                                                                        \
  extern "C" __attribute__((visibility("default"))) __attribute__((weak)) ret name(__VA_ARGS__)

// The object behind ncclComm_t. A communicator made with
// config.blocking = 0 starts with `pending` (its init running on a thread
// of its own) and no `impl`: checkComm waits for it, ncclCommGetAsyncError
// reports ncclInProgress until it is done.
struct ncclComm {
  std::uint64_t magic;
  std::shared_ptr<hora::core::Communicator> impl;
  std::shared_future<std::shared_ptr<hora::core::Communicator>> pending;
  // A non-blocking init's abort flag: ncclCommAbort sets it to stop the init.
  std::shared_ptr<std::atomic<bool>> initAbort;
  // ncclCommFinalize was called: as NCCL's, a second call is refused.
  std::atomic<bool> finalizeCalled{false};
  // Its config said blocking = 0 (a split's or shrink's without a config
  // of its own: its parent's did). A split or shrink of it then returns at
  // once, as NCCL's, and goes on on a thread of its own; so does a group
  // of such communicators at its ncclGroupEnd (api/group.h).
  bool nonBlocking = false;
  // Work on this communicator that runs on a thread of its own, while it
  // may still run: a split or shrink of it (from the exchange over it to
  // the new communicator's init), or a group of non-blocking communicators
  // it takes part in. As in NCCL, calls on this communicator wait for it,
  // ncclCommGetAsyncError says ncclInProgress until it is done, and its
  // failure is this communicator's error from then on.
  std::shared_future<void> job;
  // Stops that work at once: ncclCommAbort of this communicator calls it
  // while the work runs (a split's: the new communicator's init stops; a
  // group's: every communicator of the group is aborted, as in NCCL).
  std::function<void()> stopJob;
};

namespace hora::api {

// ncclDataType_t values are DataType's: checkType (api/arguments.h) checks
// an ncclDataType_t against DataType's range, and a cast converts it.
static_assert(static_cast<int>(ncclNumTypes) == kNumDataTypes);

inline constexpr std::uint64_t kCommMagic = 0x686f7261636f6d6dull;  // "horacomm"

using CommPtr = std::shared_ptr<core::Communicator>;

// Live communicators; a handle not registered here (NULL, destroyed, garbage)
// is refused with a clear error instead of being dereferenced.
void registerComm(ncclComm* comm);
// A new registered handle for `impl`, or for a communicator that `making`
// is still making (stopped through `initAbort`, where given).
ncclComm* wrapComm(CommPtr impl, bool nonBlocking);
ncclComm* wrapPending(std::shared_future<CommPtr> making, bool nonBlocking,
                      std::shared_ptr<std::atomic<bool>> initAbort = nullptr);
// Records work on `comm` that runs on a thread of its own (ncclComm::job,
// stopJob).
void setJob(ncclComm_t comm, std::shared_future<void> job, std::function<void()> stopJob);
bool isNonBlocking(ncclComm_t comm);
// The communicator behind a live handle, or null while its init runs or
// after it failed (never waits, unlike checkComm).
CommPtr madeComm(ncclComm_t comm);
// The communicator behind a live handle once its init is done (its error
// if it failed); unlike checkComm, not waiting for a job on it.
CommPtr awaitInit(ncclComm_t comm);
// Removes the handle and returns its communicator (for destroy and abort),
// after its non-blocking init, if one still runs: stopped first (stopInit,
// abort: not waited for, it ends by itself), or awaited (destroy). Both
// wait for its job (ncclComm::job; abort first stops the job and aborts
// the communicator, which ends it at once), so that the thread running it
// holds the communicator no more.
CommPtr unregisterComm(ncclComm_t comm, bool stopInit = false);
// The communicator behind a live handle. Entry points hold the returned
// pointer for the whole call, so a concurrent ncclCommAbort or Destroy
// cannot free it underneath them. A handle whose non-blocking init is
// still running is waited for (its init's error, if it failed, is thrown),
// and so is its job (ncclComm::job: its error, likewise, unless
// `jobFailure` says to ignore it: revoke and shrink, the way out of a
// failure, still work).
enum class JobFailure { Throw, Ignore };
CommPtr checkComm(ncclComm_t comm, JobFailure jobFailure = JobFailure::Throw);
// checkComm for calls that NCCL refuses on a communicator with an
// asynchronous error (its queries, ncclRedOpCreatePreMulSum,
// ncclCommFinalize): a communicator broken by an earlier error throws that
// error. An aborted or revoked one is still answered, as NCCL's is.
CommPtr checkCommNotBroken(ncclComm_t comm);
// For ncclCommGetAsyncError: true while the handle's non-blocking init
// runs, or its job.
bool inProgress(ncclComm_t comm);

ncclResult_t resultOf(ErrorKind kind);
// Records the text ncclGetLastError returns on this thread.
void setLastError(const std::string& text);
// A call failed: its text for ncclGetLastError, and a WARN line (NCCL_DEBUG
// or HORA_DEBUG at WARN or finer), as NCCL warns of a failing call, so that
// a program that prints only ncclGetErrorString's text still shows why.
void reportError(const std::string& text);
const char* lastError();

// Runs `body`, turning exceptions into result codes and error texts.
template <typename Body>
ncclResult_t guarded(const char* function, Body&& body) {
  try {
    body();
    return ncclSuccess;
  } catch (const Error& error) {
    reportError(strCat(function, ": ", error.what()));
    return resultOf(error.kind());
  } catch (const std::bad_alloc&) {
    reportError(strCat(function, ": out of host memory"));
    return ncclSystemError;
  } catch (const std::exception& error) {
    reportError(strCat(function, ": internal error: ", error.what()));
    return ncclInternalError;
  }
}

}  // namespace hora::api
