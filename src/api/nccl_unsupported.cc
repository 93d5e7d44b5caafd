// nccl.h entry points hora does not implement yet. They exist (a program
// linked against NVIDIA's library finds every symbol) and fail cleanly with
// ncclInvalidUsage and a ncclGetLastError text. docs/nccl-api.md lists them.
#include "api/nccl_api.h"

using namespace hora;

namespace {
ncclResult_t unsupported(const char* function, const char* why) {
  api::setLastError(strCat(function, ": not supported by hora yet (", why, ")"));
  return ncclInvalidUsage;
}
constexpr const char* kNeedsCuda = "device memory needs the CUDA executor";
}  // namespace

HORA_NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  (void)ptr, (void)size;
  return unsupported("ncclMemAlloc", kNeedsCuda);
}
HORA_NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  (void)ptr;
  return unsupported("ncclMemFree", kNeedsCuda);
}
HORA_NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  (void)comm, (void)revokeFlags;
  return unsupported("ncclCommRevoke", "fault-tolerant revoke is not implemented");
}
HORA_NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
              ncclConfig_t* config) {
  (void)comm, (void)color, (void)key, (void)newcomm, (void)config;
  return unsupported("ncclCommSplit", "create the sub-communicator with ncclCommInitRank instead");
}
HORA_NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
              int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  (void)comm, (void)excludeRanksList, (void)excludeRanksCount, (void)newcomm, (void)config,
      (void)shrinkFlags;
  return unsupported("ncclCommShrink", "create a new communicator with ncclCommInitRank instead");
}
HORA_NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
              int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  (void)newcomm, (void)nranks, (void)myrank, (void)nId, (void)commIds, (void)config;
  return unsupported("ncclCommInitRankScalable", "use ncclCommInitRank with one unique id");
}
HORA_NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
              void** handle) {
  (void)comm, (void)buff, (void)size, (void)handle;
  return unsupported("ncclCommRegister", kNeedsCuda);
}
HORA_NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  (void)comm, (void)handle;
  return unsupported("ncclCommDeregister", kNeedsCuda);
}
HORA_NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
              ncclWindow_t* win, int winFlags) {
  (void)comm, (void)buff, (void)size, (void)win, (void)winFlags;
  return unsupported("ncclCommWindowRegister", kNeedsCuda);
}
HORA_NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  (void)comm, (void)win;
  return unsupported("ncclCommWindowDeregister", kNeedsCuda);
}
HORA_NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  (void)simInfo;
  return unsupported("ncclGroupSimulateEnd", "no performance model yet");
}
HORA_NCCL_API(void, ncclResetDebugInit, void) {
  // Logging settings are read once per process; nothing to reset.
}
