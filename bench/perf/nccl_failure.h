// What hora-perf does when an NCCL call fails: say which rank, which call
// and why, then end the process. Other ranks may be waiting inside a
// collective that can no longer complete, so there is nothing to unwind to.
#pragma once

#include "nccl.h"

namespace hora::perf {

// Exit status for a failed NCCL call or a wrong result.
inline constexpr int kFailureExitStatus = 1;

// Returns when `result` is ncclSuccess; otherwise prints
//   hora-perf: rank R: CALL failed: <ncclGetErrorString> (<ncclGetLastError>)
// to stderr and exits with kFailureExitStatus. `rank` < 0 names no rank.
void checkNccl(ncclResult_t result, const char* call, int rank, ncclComm_t comm);

// Prints "hora-perf: <message>" to stderr and exits with kFailureExitStatus.
[[noreturn]] void failAndExit(const char* message);

}  // namespace hora::perf
