// The pieces behind runRanks(): one runner per mode and what they share.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "run_ranks.h"

namespace hora_coll_test {

RunOutcome runAsThreads(const RunOptions& options, const ProgramFactory& factory);
RunOutcome runAsOneThread(const RunOptions& options, const ProgramFactory& factory);
RunOutcome runAsProcesses(const RunOptions& options, const ProgramFactory& factory);

// A rank's steps one after another, on the calling thread. On a failed
// launch it reports the error, aborts the communicator (so that peers fail
// at once instead of at their timeout) and returns false.
// `onStep` (optional) is told each step as it begins.
bool runProgramSteps(RankProgram& program, RankContext& context,
                     const std::function<void(int step)>& onStep = {});

// The text of a failed nccl call: result code and the library's message.
std::string describeFailure(const char* call, ncclResult_t result, ncclComm_t comm);

// Sets variables for its lifetime, restoring the previous values after.
// Only while no other thread reads the environment.
class ScopedEnvironment {
 public:
  explicit ScopedEnvironment(const std::vector<std::pair<std::string, std::string>>& variables);
  ~ScopedEnvironment();
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// The variables every rank gets: HORA_SOCKET_IFNAME=lo, then the options'.
std::vector<std::pair<std::string, std::string>> rankEnvironment(const RunOptions& options);

// Aborts the program if not dismissed before the deadline: a rank thread
// stuck in the library cannot be cancelled, and waiting for the outer test
// timeout would hide which run hung. `describeStuck` says who is stuck.
class Watchdog {
 public:
  Watchdog(std::chrono::seconds deadline, std::string what,
           std::function<std::string()> describeStuck);
  ~Watchdog();  // dismisses

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool dismissed_ = false;
  std::thread thread_;
};

}  // namespace hora_coll_test
