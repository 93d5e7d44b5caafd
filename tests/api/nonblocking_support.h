// Helpers for tests of non-blocking communicators (config.blocking = 0):
// the config, polling a communicator's state until it settles, a
// HORA_TIMEOUT for the communicators a test makes, and communicators of
// every rank made and destroyed by one thread.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "nccl_outcome.h"

namespace hora_api_test {

using Clock = std::chrono::steady_clock;
constexpr auto kSettle = std::chrono::seconds(20);

inline ncclConfig_t nonBlockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Polls ncclCommGetAsyncError until the state is no longer ncclInProgress
// (at most `limit`); ncclInternalError if the query itself failed.
inline ncclResult_t settle(ncclComm_t comm, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
    if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return state;
}

// HORA_TIMEOUT set to `seconds` for the communicators made while it lives
// (they read it at init), then what it was before.
class ScopedTimeout {
 public:
  explicit ScopedTimeout(const char* seconds) {
    const char* saved = std::getenv("HORA_TIMEOUT");
    hadValue_ = saved != nullptr;
    if (hadValue_) previous_ = saved;
    ::setenv("HORA_TIMEOUT", seconds, 1);
  }
  ~ScopedTimeout() { restore(); }
  void restore() {
    if (hadValue_) ::setenv("HORA_TIMEOUT", previous_.c_str(), 1);
    else ::unsetenv("HORA_TIMEOUT");
  }
  ScopedTimeout(const ScopedTimeout&) = delete;
  ScopedTimeout& operator=(const ScopedTimeout&) = delete;

 private:
  bool hadValue_ = false;
  std::string previous_;
};

// `n` non-blocking communicators, every rank's made by this thread (each
// init returns at once), ready.
inline std::vector<ncclComm_t> makeNonBlocking(int n) {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclComm_t> comms(n, nullptr);
  for (int rank = 0; rank < n; ++rank) {
    ncclConfig_t config = nonBlockingConfig();
    EXPECT_THAT(ncclCommInitRankConfig(&comms[rank], n, id, rank, &config),
                ::testing::AnyOf(ncclInProgress, ncclSuccess));
  }
  for (ncclComm_t comm : comms) EXPECT_EQ(settle(comm, kSettle), ncclSuccess) << ncclGetLastError(nullptr);
  return comms;
}

// The same, with HORA_TIMEOUT `seconds` for them (they read it at init).
inline std::vector<ncclComm_t> makeNonBlocking(int n, const char* seconds) {
  ScopedTimeout timeout(seconds);
  return makeNonBlocking(n);
}

// A split with rank 1's colour -5 failed: `comm`'s state and its calls
// say so from then on, as in NCCL.
inline void expectTheBadColourIsTheError(ncclComm_t comm, int rank) {
  EXPECT_EQ(settle(comm, kSettle), ncclInvalidArgument) << "rank " << rank;
  EXPECT_THAT(std::string(ncclGetLastError(nullptr)), ::testing::HasSubstr("rank 1 gave colour -5"));
  long long value = 1;
  EXPECT_THAT(outcomeOf(ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comm, nullptr)),
              FailsWith(ncclInvalidArgument, Words{"colour -5"}));
}

inline void destroyAll(const std::vector<ncclComm_t>& comms) {
  for (ncclComm_t comm : comms) {
    if (comm != nullptr) {
      EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
    }
  }
}

}  // namespace hora_api_test
