#include <mutex>
#include <unordered_set>

#include "api/nccl_api.h"

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

CommPtr unregisterComm(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  checkLive(comm);
  registry().erase(comm);
  CommPtr impl = std::move(comm->impl);
  comm->magic = 0;
  delete comm;
  return impl;
}

CommPtr checkComm(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(registryMutex);
  checkLive(comm);
  return comm->impl;
}

ncclResult_t resultOf(ErrorKind kind) {
  switch (kind) {
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

}  // namespace hora::api
