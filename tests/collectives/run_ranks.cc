#include "run_ranks.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <gtest/gtest.h>

#include "run_modes.h"

namespace hora_coll_test {

const char* rankModeName(RankMode mode) {
  switch (mode) {
    case RankMode::Threads: return "threads";
    case RankMode::OneThread: return "one thread";
    case RankMode::Processes: return "processes";
  }
  return "?";
}

bool RunOutcome::ok() const {
  for (const auto& rank : ranks)
    if (rank.failed || !rank.completed) return false;
  return !ranks.empty();
}

bool RunOutcome::agree() const {
  const std::string* first = nullptr;
  for (const auto& rank : ranks) {
    if (rank.agreement.empty()) continue;
    if (first != nullptr && *first != rank.agreement) return false;
    first = &rank.agreement;
  }
  return true;
}

std::string RunOutcome::summary() const {
  std::string text;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const auto& rank = ranks[r];
    text += "rank " + std::to_string(r) + ": ";
    if (rank.failed) text += "FAILED";
    else if (!rank.completed) text += "did not complete";
    else text += "ok";
    if (!rank.agreement.empty()) text += " [agreement " + rank.agreement + "]";
    text += "\n";
    if (!rank.report.empty()) text += rank.report + (rank.report.back() == '\n' ? "" : "\n");
  }
  return text;
}

RunOutcome runRanks(const RunOptions& options, const ProgramFactory& factory) {
  if (options.nranks < 1) throw std::invalid_argument("runRanks needs at least one rank");
  switch (options.mode) {
    case RankMode::Threads: return runAsThreads(options, factory);
    case RankMode::OneThread: return runAsOneThread(options, factory);
    case RankMode::Processes: return runAsProcesses(options, factory);
  }
  throw std::invalid_argument("unknown rank mode");
}

void expectRanksSucceed(const RunOptions& options, const ProgramFactory& factory) {
  RunOutcome outcome = runRanks(options, factory);
  EXPECT_TRUE(outcome.ok()) << options.nranks << " ranks as " << rankModeName(options.mode)
                            << ":\n"
                            << outcome.summary();
  EXPECT_TRUE(outcome.agree()) << "ranks disagree on a result that must be identical:\n"
                               << outcome.summary();
}

// ------------------------------------------------------------ shared parts

std::string describeFailure(const char* call, ncclResult_t result, ncclComm_t comm) {
  const char* detail = ncclGetLastError(comm);
  return std::string(call) + " returned " + std::to_string(static_cast<int>(result)) + " (" +
         ncclGetErrorString(result) + "): " + (detail != nullptr ? detail : "");
}

bool runProgramSteps(RankProgram& program, RankContext& context,
                     const std::function<void(int step)>& onStep) {
  for (int step = 0; step < program.steps(); ++step) {
    if (onStep) onStep(step);
    program.prepare(step, context);
    ncclResult_t result = program.launch(step, context);
    if (result != ncclSuccess) {
      ADD_FAILURE() << "step '" << program.describeStep(step) << "': "
                    << describeFailure("the launch", result, context.comm);
      program.finish(context);
      ncclCommAbort(context.comm);  // peers waiting on this rank fail now
      context.comm = nullptr;
      return false;
    }
    program.verify(step, context);
  }
  program.finish(context);
  return true;
}

ScopedEnvironment::ScopedEnvironment(
    const std::vector<std::pair<std::string, std::string>>& variables) {
  for (const auto& [name, value] : variables) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
}

ScopedEnvironment::~ScopedEnvironment() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
    else ::unsetenv(it->first.c_str());
  }
}

std::vector<std::pair<std::string, std::string>> rankEnvironment(const RunOptions& options) {
  std::vector<std::pair<std::string, std::string>> variables = {{"HORA_SOCKET_IFNAME", "lo"}};
  variables.insert(variables.end(), options.environment.begin(), options.environment.end());
  return variables;
}

Watchdog::Watchdog(std::chrono::seconds deadline, std::string what,
                   std::function<std::string()> describeStuck) {
  thread_ = std::thread([this, deadline, what = std::move(what),
                         describeStuck = std::move(describeStuck)] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (cv_.wait_for(lock, deadline, [&] { return dismissed_; })) return;
    std::fprintf(stderr, "\n*** %s did not finish within %lld s; %s\n*** aborting the test program\n",
                 what.c_str(), static_cast<long long>(deadline.count()), describeStuck().c_str());
    std::fflush(nullptr);
    std::abort();
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dismissed_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace hora_coll_test
