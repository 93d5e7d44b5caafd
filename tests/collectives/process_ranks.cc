// The Processes mode of runRanks(): a forked child per rank.
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "run_modes.h"
#include "support/child_process.h"
#include "support/free_port.h"

namespace hora_coll_test {

using hora::test_support::ChildExit;
using hora::test_support::ChildProcess;
using hora::test_support::Reporter;

namespace {

// Collects the text of every gtest failure in a child, for its report.
class FailureCollector : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    ++count_;
    text_ += std::string(result.file_name() != nullptr ? result.file_name() : "?") + ":" +
             std::to_string(result.line_number()) + ": " + result.message() + "\n";
  }
  int count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_;
  }
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 private:
  std::mutex mutex_;
  int count_ = 0;
  std::string text_;
};

// The child's whole life; returns its exit code (0 passed, 1 failed). It
// reports the agreement digest, then the text of its failures.
int runChild(const RunOptions& options, const ProgramFactory& factory, int rank, int port,
             Reporter& reporter) {
  for (const auto& [name, value] : rankEnvironment(options)) ::setenv(name.c_str(), value.c_str(), 1);
  const std::string commId = "127.0.0.1:" + std::to_string(port);
  ::setenv("HORA_COMM_ID", commId.c_str(), 1);

  auto* collector = new FailureCollector;  // owned by gtest from here on
  ::testing::UnitTest::GetInstance()->listeners().Append(collector);
  RankContext context;
  context.rank = rank;
  context.nranks = options.nranks;
  {
    SCOPED_TRACE("rank " + std::to_string(rank) + " of " + std::to_string(options.nranks) +
                 " (process " + std::to_string(::getpid()) + ")");
    try {
      ncclUniqueId id;
      ncclResult_t result = ncclGetUniqueId(&id);
      if (result != ncclSuccess) {
        ADD_FAILURE() << describeFailure("ncclGetUniqueId", result, nullptr);
      } else if ((result = ncclCommInitRank(&context.comm, options.nranks, id, rank)) !=
                 ncclSuccess) {
        ADD_FAILURE() << describeFailure("ncclCommInitRank", result, nullptr);
      } else {
        std::unique_ptr<RankProgram> program = factory(rank, options.nranks);
        if (runProgramSteps(*program, context)) {
          result = ncclCommDestroy(context.comm);
          if (result != ncclSuccess)
            ADD_FAILURE() << describeFailure("ncclCommDestroy", result, nullptr);
        }
      }
    } catch (const std::exception& error) {
      ADD_FAILURE() << "exception: " << error.what();
    }
  }
  reporter.report("agreement", context.agreement);
  reporter.report("failures", collector->text());
  return collector->count() == 0 ? 0 : 1;
}

}  // namespace

RunOutcome runAsProcesses(const RunOptions& options, const ProgramFactory& factory) {
  const int n = options.nranks;
  RunOutcome outcome;
  outcome.ranks.resize(n);
  const int port = hora::test_support::freeLoopbackPort();
  // Every child lives a little longer than the deadline: the parent kills
  // it first, the child's own alarm is the backstop.
  const auto lifetime = std::chrono::seconds(options.deadline.count() + 10);
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (int r = 0; r < n; ++r)
    children.push_back(std::make_unique<ChildProcess>(
        [&, r](Reporter& reporter) { return runChild(options, factory, r, port, reporter); },
        lifetime));

  // Drain every child's reports while they run (a report larger than a pipe
  // would otherwise block its child), until all exited or the deadline.
  std::vector<std::optional<ChildExit>> exits(n);
  const auto deadline = std::chrono::steady_clock::now() + options.deadline;
  for (;;) {
    bool running = false;
    for (int r = 0; r < n; ++r)
      if (!exits[r] && !(exits[r] = children[r]->pollExit())) running = true;
    if (!running || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }

  for (int r = 0; r < n; ++r) {
    ChildProcess& child = *children[r];
    RankOutcome& rank = outcome.ranks[r];
    const ChildExit exit = exits[r] ? *exits[r] : child.waitExit(std::chrono::milliseconds(0));
    const bool reported = child.waitFor("agreement", std::chrono::milliseconds(0)).has_value();
    rank.agreement = child.value("agreement");
    rank.report = child.value("failures");
    const bool passed = !exit.timedOut && exit.exited && exit.code == 0;
    rank.completed = !exit.timedOut && exit.exited;
    rank.failed = !passed;
    if (exit.timedOut)
      rank.report += "still running after " + std::to_string(options.deadline.count()) +
                     " s; killed\n";
    else if (!passed)
      rank.report += "process " + std::to_string(child.pid()) + " " + exit.describe() +
                     (reported ? "" : " before reporting") + "\n";
  }
  return outcome;
}

}  // namespace hora_coll_test
