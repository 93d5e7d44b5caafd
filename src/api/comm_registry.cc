#include <chrono>
#include <deque>
#include <future>
#include <mutex>
#include <unordered_set>

#include "api/nccl_api.h"
#include "base/log.h"

namespace hora::api {

namespace {
std::mutex registryMutex;
std::unordered_set<ncclComm*>& registry() {
  static auto* live = new std::unordered_set<ncclComm*>();  // never destroyed: used at exit
  return *live;
}

// Destroyed handles are kept, emptied, for this many destroys more before
// their memory goes back: a new communicator cannot get the address of
// one destroyed lately, so a handle used after its destroy (a second
// ncclCommDestroy, a watchdog's abort after the program's destroy) is
// refused instead of reaching the communicator made since at that address.
constexpr std::size_t kRetiredHandlesKept = 4096;
std::deque<ncclComm*>& retired() {
  static auto* kept = new std::deque<ncclComm*>();  // never destroyed, as the registry
  return *kept;
}
// Under registryMutex.
void retire(ncclComm* comm) {
  comm->magic = 0;
  comm->stopJob = nullptr;
  comm->initAbort.reset();
  retired().push_back(comm);
  if (retired().size() > kRetiredHandlesKept) {
    delete retired().front();
    retired().pop_front();
  }
}
thread_local std::string threadLastError;
}  // namespace

void registerComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().insert(comm);
}

ncclComm* wrapComm(CommPtr impl, bool nonBlocking) {
  auto* comm = new ncclComm{};
  comm->magic = kCommMagic;
  comm->impl = std::move(impl);
  comm->nonBlocking = nonBlocking;
  registerComm(comm);
  return comm;
}

ncclComm* wrapPending(std::shared_future<CommPtr> making, bool nonBlocking,
                      std::shared_ptr<std::atomic<bool>> initAbort) {
  auto* comm = new ncclComm{};
  comm->magic = kCommMagic;
  comm->pending = std::move(making);
  comm->initAbort = std::move(initAbort);
  comm->nonBlocking = nonBlocking;
  registerComm(comm);
  return comm;
}

namespace {
void checkLive(ncclComm_t comm) {
  HORA_CHECK_ARG(comm != nullptr, "the communicator is NULL");
  if (registry().count(comm) == 0 || comm->magic != kCommMagic)
    fail(ErrorKind::InvalidArgument, "the communicator ", static_cast<const void*>(comm),
         " is not a live communicator (already destroyed, or never created)");
}

bool running(const std::shared_future<void>& work) {
  return work.valid() && work.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
}

// A job (a split, a shrink, a non-blocking group) that ended well has
// nothing more to say: forgotten, so that later calls on the communicator
// neither copy its future nor look at it. A failed one stays: it is the
// communicator's error.
void forgetSucceededJob(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  if (registry().count(comm) == 0 || !comm->job.valid() || running(comm->job)) return;
  try {
    comm->job.get();
  } catch (...) {
    return;
  }
  comm->job = {};
  comm->stopJob = nullptr;
}
}  // namespace

void setJob(ncclComm_t comm, std::shared_future<void> job, std::function<void()> stopJob) {
  std::lock_guard<std::mutex> lock(registryMutex);
  checkLive(comm);
  comm->job = std::move(job);
  comm->stopJob = std::move(stopJob);
}

namespace {
// What a live handle holds: its communicator, or (a non-blocking init's,
// which stays there once made) the future of its init.
struct Held {
  CommPtr impl;
  std::shared_future<CommPtr> pending;
};
Held heldBy(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  checkLive(comm);
  if (comm->impl || !comm->pending.valid()) return {comm->impl, {}};
  return {nullptr, comm->pending};
}
}  // namespace

CommPtr madeComm(ncclComm_t comm) {
  Held held = heldBy(comm);
  if (!held.pending.valid()) return held.impl;
  if (held.pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return nullptr;
  try {
    return held.pending.get();
  } catch (...) {
    return nullptr;  // the init failed: there is no communicator
  }
}

bool isNonBlocking(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  checkLive(comm);
  return comm->nonBlocking;
}

CommPtr awaitInit(ncclComm_t comm) {
  Held held = heldBy(comm);
  return held.pending.valid() ? held.pending.get() : held.impl;  // outside the lock: the init may take a while
}

CommPtr unregisterComm(ncclComm_t comm, bool stopInit) {
  std::shared_future<CommPtr> pending;
  std::shared_future<void> job;
  std::function<void()> stopJob;
  CommPtr impl;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    checkLive(comm);
    registry().erase(comm);
    impl = std::move(comm->impl);
    pending = std::move(comm->pending);
    job = std::move(comm->job);
    if (stopInit && comm->initAbort) comm->initAbort->store(true);
    if (stopInit && running(job)) stopJob = std::move(comm->stopJob);
    retire(comm);
  }
  // Work on it still running (a split or shrink of it, a non-blocking
  // group) uses it with the other ranks: destroy lets it end (its outcome
  // was the work's to report), abort ends it (the work's own stop, then
  // the communicator's abort: again, later, for the caller, abort is
  // idempotent). Either way the thread that ran it holds the communicator
  // no more once this returns.
  if (job.valid()) {
    if (stopJob) stopJob();
    if (stopInit && impl) impl->abort();
    job.wait();
  }
  // Destroying a communicator whose init still runs waits for the init.
  // Aborting it stops the init (initAbort) and does not wait: what the init
  // made, if anything, is freed when it ends. A failed init leaves nothing.
  if (!impl && pending.valid()) {
    if (stopInit && pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return nullptr;
    try {
      impl = pending.get();
    } catch (...) {
      return nullptr;
    }
  }
  return impl;
}

CommPtr checkComm(ncclComm_t comm, JobFailure jobFailure) {
  std::shared_future<CommPtr> pending;
  std::shared_future<void> job;
  CommPtr impl;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    checkLive(comm);
    impl = comm->impl;
    if (!impl) pending = comm->pending;
    job = comm->job;
  }
  // Outside the lock: the init or the job may take a while.
  if (job.valid()) {
    if (jobFailure == JobFailure::Throw) job.get();
    else job.wait();
    forgetSucceededJob(comm);
  }
  return impl || !pending.valid() ? impl : pending.get();
}

CommPtr checkCommNotBroken(ncclComm_t comm) {
  CommPtr impl = checkComm(comm);
  impl->checkNotBroken();
  return impl;
}

bool inProgress(ncclComm_t comm) {
  std::shared_future<CommPtr> pending;
  std::shared_future<void> job;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    checkLive(comm);
    if (!comm->impl) pending = comm->pending;
    job = comm->job;
  }
  const bool initRuns = pending.valid() && pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
  return initRuns || running(job);
}

ncclResult_t resultOf(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Cuda: return ncclUnhandledCudaError;
    case ErrorKind::System: return ncclSystemError;
    case ErrorKind::Internal: return ncclInternalError;
    case ErrorKind::InvalidArgument: return ncclInvalidArgument;
    case ErrorKind::InvalidUsage: return ncclInvalidUsage;
    case ErrorKind::Remote: return ncclRemoteError;
  }
  return ncclInternalError;
}

void setLastError(const std::string& text) { threadLastError = text; }
const char* lastError() { return threadLastError.c_str(); }

void reportError(const std::string& text) {
  setLastError(text);
  HORA_LOG(Warn, text);
}

}  // namespace hora::api
