#include <chrono>
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
thread_local std::string threadLastError;
}  // namespace

void registerComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().insert(comm);
}

namespace {
void checkLive(ncclComm_t comm) {
  HORA_CHECK_ARG(comm != nullptr, "the communicator is NULL");
  if (registry().count(comm) == 0 || comm->magic != kCommMagic)
    fail(ErrorKind::InvalidArgument, "the communicator ", static_cast<const void*>(comm),
         " is not a live communicator (already destroyed, or never created)");
}
}  // namespace

CommPtr unregisterComm(ncclComm_t comm, bool stopInit) {
  std::shared_future<CommPtr> pending;
  CommPtr impl;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    checkLive(comm);
    registry().erase(comm);
    impl = std::move(comm->impl);
    pending = std::move(comm->pending);
    if (stopInit && comm->initAbort) comm->initAbort->store(true);
    comm->magic = 0;
    delete comm;
  }
  // Destroying a communicator whose init still runs waits for the init;
  // aborting it first stops the init's waits, which then fail at once. A
  // failed init leaves nothing.
  if (!impl && pending.valid()) {
    try {
      impl = pending.get();
    } catch (const Error&) {
      return nullptr;
    }
  }
  return impl;
}

CommPtr checkComm(ncclComm_t comm) {
  std::shared_future<CommPtr> pending;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    checkLive(comm);
    if (comm->impl || !comm->pending.valid()) return comm->impl;
    pending = comm->pending;
  }
  return pending.get();  // outside the lock: the init may take a while
}

CommPtr checkCommNotBroken(ncclComm_t comm) {
  CommPtr impl = checkComm(comm);
  impl->checkNotBroken();
  return impl;
}

bool initInProgress(ncclComm_t comm) {
  std::shared_future<CommPtr> pending;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    checkLive(comm);
    if (comm->impl || !comm->pending.valid()) return false;
    pending = comm->pending;
  }
  return pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
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
