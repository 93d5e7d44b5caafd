#include "nccl_failure.h"

#include <unistd.h>

#include <cstdio>
#include <mutex>

namespace hora::perf {
namespace {

// Several threads may fail at once; their messages must not interleave.
std::mutex reportMutex;

}  // namespace

void checkNccl(ncclResult_t result, const char* call, int rank, ncclComm_t comm) {
  if (result == ncclSuccess) return;
  {
    std::lock_guard<std::mutex> lock(reportMutex);
    const char* detail = ncclGetLastError(comm);
    std::fflush(stdout);
    if (rank >= 0) {
      std::fprintf(stderr, "hora-perf: rank %d: %s failed: %s", rank, call, ncclGetErrorString(result));
    } else {
      std::fprintf(stderr, "hora-perf: %s failed: %s", call, ncclGetErrorString(result));
    }
    if (detail != nullptr && detail[0] != '\0') std::fprintf(stderr, " (%s)", detail);
    std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }
  // _exit: the other threads may be blocked in the library; running static
  // destructors underneath them could crash instead of exiting cleanly.
  _exit(kFailureExitStatus);
}

void failAndExit(const char* message) {
  std::fflush(stdout);
  std::fprintf(stderr, "hora-perf: %s\n", message);
  std::fflush(stderr);
  _exit(kFailureExitStatus);
}

}  // namespace hora::perf
