// nccl.h entry points hora does not implement yet. They exist (a program
// linked against NVIDIA's library finds every symbol) and fail cleanly with
// ncclInvalidUsage and a ncclGetLastError text. docs/nccl-api.md lists them.
#include "api/group.h"
#include "api/nccl_api.h"

using namespace hora;

namespace {
ncclResult_t unsupported(const char* function, const char* why) {
  api::reportError(strCat(function, ": not supported by hora yet (", why, ")"));
  return ncclInvalidUsage;
}
}  // namespace

HORA_NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  (void)simInfo;
  // It ends a level of the group as NCCL's does; at the outermost the
  // operations are dropped, not run, and it says that nothing was estimated.
  const bool outermost = api::groupDepth() == 1;
  const ncclResult_t closed = api::closeGroupLevel("ncclGroupSimulateEnd", false);
  if (closed != ncclSuccess || !outermost) return closed;
  return unsupported("ncclGroupSimulateEnd", "no performance model yet");
}
HORA_NCCL_API(void, ncclResetDebugInit, void) {
  // Logging settings are read once per process; nothing to reset.
}

// NVIDIA's library exports this undeclared variant of ncclResetDebugInit
// (its own tests call it; it has no pncclX alias), so hora's must too. The
// same no-op.
extern "C" __attribute__((visibility("default"))) void ncclResetDebugInitInternal(void);
extern "C" void ncclResetDebugInitInternal(void) {}
