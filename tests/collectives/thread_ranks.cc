// The Threads and OneThread modes of runRanks().
#include <atomic>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "run_modes.h"

namespace hora_coll_test {

namespace {
// Which step each rank is in, readable by the watchdog while ranks run.
class Progress {
 public:
  explicit Progress(int nranks) : steps_(nranks) {
    for (auto& step : steps_) step.store(-1);
  }
  void set(int rank, int step) { steps_[rank].store(step); }
  void done(int rank) { steps_[rank].store(kDone); }
  std::string stuck() const {
    std::string text = "unfinished ranks (rank: step, -1 = init):";
    for (std::size_t r = 0; r < steps_.size(); ++r) {
      int step = steps_[r].load();
      if (step == kDone) continue;
      text += ' ';
      text += std::to_string(r);
      text += ": ";
      text += std::to_string(step);
    }
    return text;
  }

 private:
  static constexpr int kDone = 1 << 30;
  std::vector<std::atomic<int>> steps_;
};

std::string runName(const RunOptions& options) {
  return std::to_string(options.nranks) + " ranks as " + rankModeName(options.mode);
}
}  // namespace

RunOutcome runAsThreads(const RunOptions& options, const ProgramFactory& factory) {
  const int n = options.nranks;
  RunOutcome outcome;
  outcome.ranks.resize(n);
  ScopedEnvironment environment(rankEnvironment(options));
  ncclUniqueId id;
  ncclResult_t idResult = ncclGetUniqueId(&id);
  if (idResult != ncclSuccess) {
    ADD_FAILURE() << describeFailure("ncclGetUniqueId", idResult, nullptr);
    return outcome;
  }
  Progress progress(n);
  Watchdog watchdog(options.deadline, runName(options), [&] { return progress.stuck(); });
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      SCOPED_TRACE("rank " + std::to_string(r) + " of " + std::to_string(n) + " (threads)");
      RankContext context;
      context.rank = r;
      context.nranks = n;
      ncclResult_t init = ncclCommInitRank(&context.comm, n, id, r);
      if (init != ncclSuccess) {
        ADD_FAILURE() << describeFailure("ncclCommInitRank", init, nullptr);
        progress.done(r);
        return;
      }
      std::unique_ptr<RankProgram> program = factory(r, n);
      const bool finished =
          runProgramSteps(*program, context, [&](int step) { progress.set(r, step); });
      if (context.comm != nullptr) {
        ncclResult_t destroyed = ncclCommDestroy(context.comm);
        if (destroyed != ncclSuccess)
          ADD_FAILURE() << describeFailure("ncclCommDestroy", destroyed, nullptr);
      }
      outcome.ranks[r].completed = finished;
      outcome.ranks[r].agreement = context.agreement;
      progress.done(r);
    });
  }
  for (auto& thread : threads) thread.join();
  return outcome;
}

RunOutcome runAsOneThread(const RunOptions& options, const ProgramFactory& factory) {
  const int n = options.nranks;
  RunOutcome outcome;
  outcome.ranks.resize(n);
  ScopedEnvironment environment(rankEnvironment(options));
  SCOPED_TRACE(runName(options));
  Progress progress(n);
  Watchdog watchdog(options.deadline, runName(options), [&] { return progress.stuck(); });

  std::vector<ncclComm_t> comms(n, nullptr);
  ncclResult_t init = ncclCommInitAll(comms.data(), n, nullptr);
  if (init != ncclSuccess) {
    ADD_FAILURE() << describeFailure("ncclCommInitAll", init, nullptr);
    return outcome;
  }
  std::vector<RankContext> contexts(n);
  std::vector<std::unique_ptr<RankProgram>> programs;
  for (int r = 0; r < n; ++r) {
    contexts[r].rank = r;
    contexts[r].nranks = n;
    contexts[r].comm = comms[r];
    programs.push_back(factory(r, n));
  }
  bool failed = false;
  const int steps = programs[0]->steps();
  for (int step = 0; step < steps && !failed; ++step) {
    for (int r = 0; r < n; ++r) progress.set(r, step);
    for (int r = 0; r < n; ++r) programs[r]->prepare(step, contexts[r]);
    ncclGroupStart();
    for (int r = 0; r < n && !failed; ++r) {
      ncclResult_t result = programs[r]->launch(step, contexts[r]);
      if (result != ncclSuccess) {
        ADD_FAILURE() << "rank " << r << ", step '" << programs[r]->describeStep(step)
                      << "': " << describeFailure("the launch", result, comms[r]);
        failed = true;
      }
    }
    ncclResult_t ended = ncclGroupEnd();
    if (ended != ncclSuccess && !failed) {
      ADD_FAILURE() << "step '" << programs[0]->describeStep(step)
                    << "': " << describeFailure("ncclGroupEnd", ended, comms[0]);
      failed = true;
    }
    if (!failed)
      for (int r = 0; r < n; ++r) {
        SCOPED_TRACE("rank " + std::to_string(r));
        programs[r]->verify(step, contexts[r]);
      }
  }
  for (int r = 0; r < n; ++r) {
    programs[r]->finish(contexts[r]);
    outcome.ranks[r].completed = !failed;
    outcome.ranks[r].agreement = contexts[r].agreement;
    ncclResult_t closed = failed ? ncclCommAbort(comms[r]) : ncclCommDestroy(comms[r]);
    if (closed != ncclSuccess) ADD_FAILURE() << describeFailure("closing a communicator", closed, nullptr);
    progress.done(r);
  }
  return outcome;
}

}  // namespace hora_coll_test
