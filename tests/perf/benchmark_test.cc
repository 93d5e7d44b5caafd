// The measurement loop, run against the host reference collectives instead
// of the library: correct collectives must report no wrong elements, and a
// faulty one must be caught.
#include "benchmark.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <thread>

#include "data_types.h"
#include "host_collectives.h"

namespace hora::perf {
namespace {

using ::testing::HasSubstr;
using testing::runOnHost;

Options smallRun(Collective collective) {
  Options options;
  options.collective = collective;
  options.sizes = {8, 1024, 4, 0};
  options.iters = 2;
  options.warmupIters = 1;
  options.checkIters = 2;
  return options;
}

// All ranks of a simulated job, with buffers for sizes up to `bytes`.
struct Job {
  Job(int nranks, std::size_t bytes) {
    for (int r = 0; r < nranks; ++r) {
      memory.push_back(std::make_unique<unsigned char[]>(bytes));
      memory.push_back(std::make_unique<unsigned char[]>(bytes));
      buffers.push_back({memory[memory.size() - 2].get(), memory.back().get()});
    }
  }
  std::vector<std::unique_ptr<unsigned char[]>> memory;
  std::vector<RankBuffers> buffers;
};

// Captures what the printing thread writes.
struct Capture {
  Capture() : file(std::tmpfile()) {}
  ~Capture() { std::fclose(file); }
  std::string text() const {
    std::rewind(file);
    std::string result;
    for (int c; (c = std::fgetc(file)) != EOF;) result.push_back(static_cast<char>(c));
    return result;
  }
  std::FILE* file;
};

std::vector<std::string> rows(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) result.push_back(line);
  return result;
}

// One thread drives every rank, like -g n.
BenchmarkTotals runSingleThread(const Options& options, int nranks, std::FILE* out, bool faulty = false) {
  Job job(nranks, options.sizes.maxBytes);
  ThreadRankSync sync(1);
  BenchmarkThread thread;
  thread.options = &options;
  thread.nranks = nranks;
  for (int r = 0; r < nranks; ++r) thread.ranks.push_back({r, job.buffers[static_cast<std::size_t>(r)], {}, {}});
  thread.sync = &sync;
  thread.launch = [&](const StepPlan& plan, bool inPlace, int) {
    runOnHost(plan, inPlace, job.buffers);
    if (faulty) {
      // Drop the first result element of the last rank.
      poisonBuffer(callPointers(plan, nranks - 1, inPlace, job.buffers.back()).recv, 1);
    }
  };
  thread.out = out;
  return runBenchmark(thread);
}

TEST(PlanSteps, SizesTypesOpsAndRoots) {
  Options options = smallRun(Collective::AllReduce);
  options.ops = {ncclSum, ncclMax};
  options.types = {ncclFloat32, ncclInt8};
  const std::vector<StepPlan> steps = planSteps(options, 2);
  // 8, 32, 128, 512 bytes for 2 types x 2 ops.
  ASSERT_EQ(steps.size(), 16u);
  EXPECT_EQ(steps[0].type, ncclFloat32);
  EXPECT_EQ(steps[0].op, ncclSum);
  EXPECT_EQ(steps[0].sizing.paramCount, 2u);
  EXPECT_EQ(steps[4].op, ncclMax);
  EXPECT_EQ(steps[8].type, ncclInt8);
  EXPECT_EQ(steps[8].sizing.paramCount, 8u);
  EXPECT_EQ(steps[0].root, -1);
}

// -N: each type's (and op's, root's) sizes run over again before the next.
TEST(PlanSteps, RunCyclesRepeatTheSizesOfEachTypeOpAndRoot) {
  Options options = smallRun(Collective::AllReduce);
  options.types = {ncclFloat32, ncclInt8};
  options.runCycles = 2;
  const std::vector<StepPlan> steps = planSteps(options, 2);
  ASSERT_EQ(steps.size(), 16u);  // 4 sizes, twice, for 2 types
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(steps[i].type, ncclFloat32) << i;
    EXPECT_EQ(steps[i].sizing.paramCount, steps[i % 4].sizing.paramCount) << i;
    EXPECT_EQ(steps[8 + i].type, ncclInt8) << i;
  }
  EXPECT_EQ(steps[4].sizing.paramCount, 2u);  // 8 bytes again
}

// planSeries is what runBenchmark repeats: one series per type, op and
// root, each listing the sizes once whatever -N says.
TEST(PlanSteps, SeriesAreTypesOpsAndRootsEachWithEverySizeOnce) {
  Options options = smallRun(Collective::Reduce);
  options.types = {ncclFloat32, ncclInt8};
  options.ops = {ncclSum, ncclMin};
  options.root.reset();
  options.runCycles = 3;
  const std::vector<StepSeries> series = planSeries(options, 2);
  ASSERT_EQ(series.size(), 8u);  // 2 types x 2 ops x 2 roots
  for (const StepSeries& steps : series) {
    ASSERT_EQ(steps.size(), 4u);
    for (const StepPlan& step : steps) {
      EXPECT_EQ(step.type, steps[0].type);
      EXPECT_EQ(step.op, steps[0].op);
      EXPECT_EQ(step.root, steps[0].root);
    }
  }
  EXPECT_EQ(series[1].front().root, 1);
  EXPECT_EQ(series[2].front().op, ncclMin);
  EXPECT_EQ(series[4].front().type, ncclInt8);
  EXPECT_EQ(planSteps(options, 2).size(), 8u * 4u * 3u);
}

TEST(PlanSteps, RootAllVisitsEveryRank) {
  Options options = smallRun(Collective::Broadcast);
  options.root.reset();
  const std::vector<StepPlan> steps = planSteps(options, 3);
  ASSERT_EQ(steps.size(), 12u);
  EXPECT_EQ(steps[0].root, 0);
  EXPECT_EQ(steps[4].root, 1);
  EXPECT_EQ(steps[8].root, 2);
  EXPECT_FALSE(steps[0].op.has_value());
}

TEST(PlanSteps, SizesTooSmallForEveryRankAreCallsOfCountZero) {
  const Options options = smallRun(Collective::AllGather);
  const std::vector<StepPlan> steps = planSteps(options, 3);
  // 8 bytes is 2 floats, not one per rank; 32 bytes is 2 floats per rank,
  // not the 16 bytes a piece is cut to: both are calls of count 0, measured
  // and printed as nccl-tests does. 128 and 512 bytes give 2 and 10 pieces
  // of 16 bytes per rank.
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].sizing.bytes(4), 0u);
  EXPECT_EQ(steps[1].sizing.bytes(4), 0u);
  EXPECT_EQ(steps[2].sizing.bytes(4), 96u);
  EXPECT_EQ(steps[3].sizing.bytes(4), 480u);
}

TEST(Benchmark, CorrectCollectivesPrintRowsWithNoWrongElements) {
  for (const CollectiveInfo& info : allCollectives()) {
    Options options = smallRun(info.collective);
    options.ops = {ncclAvg};
    Capture capture;
    const BenchmarkTotals totals = runSingleThread(options, 3, capture.file);
    EXPECT_EQ(totals.wrongElements, 0) << info.name << "\n" << capture.text();
    const std::vector<std::string> printed = rows(capture.text());
    const std::size_t expectedRows = planSteps(options, 3).size();
    ASSERT_EQ(printed.size(), expectedRows) << info.name;
    EXPECT_EQ(totals.results, static_cast<int>(2 * expectedRows));
    for (const std::string& row : printed) {
      std::istringstream fields(row);
      std::string size, count, type, redop, root;
      fields >> size >> count >> type >> redop >> root;
      EXPECT_EQ(type, "float");
      // sendrecv names -o's op as nccl-tests' sendrecv_perf does.
      EXPECT_EQ(redop, rowPerOp(info) ? "avg" : "none");
      EXPECT_EQ(root, info.rooted ? "0" : "-1");
      std::string time, algbw, busbw, wrongOut, wrongIn;
      fields >> time >> algbw >> busbw >> wrongOut >> time >> algbw >> busbw >> wrongIn;
      EXPECT_EQ(wrongOut, "0") << row;
      EXPECT_EQ(wrongIn, info.inPlace == InPlaceForm::Checked ? "0" : "N/A") << row;
      EXPECT_NE(time, "N/A") << row;  // every in-place form is timed, as in nccl-tests
    }
  }
}

TEST(Benchmark, FaultyCollectiveIsCaught) {
  for (const CollectiveInfo& info : allCollectives()) {
    Options options = smallRun(info.collective);
    options.root = 2;  // the faulty rank: it has a result for every collective
    Capture capture;
    const BenchmarkTotals totals = runSingleThread(options, 3, capture.file, true);
    // One wrong element per place checked, per size with elements (a call
    // of count 0 has none to get wrong): the checks stop at the first that
    // found one, as nccl-tests' do, so the count is the first check's, and
    // each such check of the one thread counts once as a failed check.
    ASSERT_GT(options.checkIters, 1);
    const long long places = info.inPlace == InPlaceForm::Checked ? 2 : 1;
    long long sizes = 0;
    for (const StepPlan& step : planSteps(options, 3)) sizes += step.sizing.bytes(4) > 0 ? 1 : 0;
    EXPECT_EQ(totals.wrongElements, places * sizes) << info.name;
    EXPECT_EQ(totals.failedChecks, places * sizes) << info.name;
    // The out-of-place #wrong column of each row shows the row's count.
    for (const std::string& row : rows(capture.text())) {
      std::istringstream fields(row);
      std::string field, size;
      fields >> size;
      for (int column = 1; column < 9; ++column) fields >> field;
      EXPECT_EQ(field, size == "0" ? "0" : "1") << row;
    }
  }
}

// One thread driving both ranks of a 2-rank job on host buffers; the test
// gives it its launch.
struct TwoRanksOnOneThread {
  explicit TwoRanksOnOneThread(const Options& options) : job(2, options.sizes.maxBytes) {
    thread.options = &options;
    thread.nranks = 2;
    thread.ranks = {{0, job.buffers[0], {}, {}}, {1, job.buffers[1], {}, {}}};
    thread.sync = &sync;
  }
  Job job;
  ThreadRankSync sync{1};
  BenchmarkThread thread;
};

// A RankSync whose barrier takes `barrierDelay`, counting the barriers.
class SlowBarrierSync final : public RankSync {
 public:
  explicit SlowBarrierSync(std::chrono::milliseconds barrierDelay) : delay_(barrierDelay) {}
  double combineSeconds(int participant, double seconds, AverageMode mode) override {
    return inner_.combineSeconds(participant, seconds, mode);
  }
  long long sumCounts(int participant, long long count) override { return inner_.sumCounts(participant, count); }
  void barrier(int participant) override {
    ++barriers;
    std::this_thread::sleep_for(delay_);
    inner_.barrier(participant);
  }
  int barriers = 0;

 private:
  ThreadRankSync inner_{1};
  std::chrono::milliseconds delay_;
};

// -z as nccl-tests: 1 waits and meets after every iteration, inside the
// time; 2 waits only; 3 meets between iterations, outside the time.
TEST(Benchmark, BlockingModesWaitAndMeetAsNcclTests) {
  constexpr auto kBarrier = std::chrono::milliseconds(40);
  struct Seen {
    int barriers = 0;
    int completions = 0;
    double seconds = 0;
  };
  auto run = [&](int blocking) {
    Options options = smallRun(Collective::AllReduce);
    options.sizes = {1024, 1024, 2, 0};
    options.iters = 3;
    options.checkIters = 0;
    options.blocking = blocking;
    TwoRanksOnOneThread two(options);
    SlowBarrierSync sync(kBarrier);
    two.thread.sync = &sync;
    Seen seen;
    two.thread.launch = [&](const StepPlan& plan, bool inPlace, int) { runOnHost(plan, inPlace, two.job.buffers); };
    two.thread.complete = [&] { ++seen.completions; };
    Capture capture;
    two.thread.out = capture.file;
    runBenchmark(two.thread);
    seen.barriers = sync.barriers;
    // The out-of-place time column, in microseconds.
    std::istringstream fields(rows(capture.text()).at(0));
    std::string field;
    for (int column = 0; column < 6; ++column) fields >> field;
    seen.seconds = std::stod(field) * 1e-6;
    return seen;
  };
  // Per place, whatever -z says: two barriers (once the inputs are written,
  // and before the timed loop), and two completions (after the untimed
  // call, after the loop).
  const Seen none = run(0), one = run(1), two = run(2), three = run(3);
  const int places = 2;
  EXPECT_EQ(none.barriers, places * 2);
  EXPECT_EQ(none.completions, places * 2);
  EXPECT_EQ(one.barriers, places * (2 + 3));
  EXPECT_EQ(one.completions, places * (2 + 3));
  EXPECT_EQ(two.barriers, places * 2);
  EXPECT_EQ(two.completions, places * (2 + 3));
  EXPECT_EQ(three.barriers, places * (2 + 3));
  EXPECT_EQ(three.completions, places * (2 + 3));
  // -z 1 times its barriers, -z 3 does not.
  const double barrier = std::chrono::duration<double>(kBarrier).count();
  EXPECT_GE(one.seconds, barrier);
  EXPECT_LT(three.seconds, barrier / 2);
}

// As nccl-tests: an in-place form whose result is not defined (alltoall
// and sendrecv on one buffer) is timed and counts in the average, but is
// not checked.
TEST(Benchmark, InPlaceAlltoallIsTimedButNotChecked) {
  const Options options = smallRun(Collective::AlltoAll);
  TwoRanksOnOneThread two(options);
  Job& job = two.job;
  BenchmarkThread& thread = two.thread;
  int calls[2] = {0, 0};
  thread.launch = [&](const StepPlan& plan, bool inPlace, int) {
    ++calls[inPlace ? 1 : 0];
    runOnHost(plan, inPlace, job.buffers);
  };
  const BenchmarkTotals totals = runBenchmark(thread);
  EXPECT_EQ(totals.wrongElements, 0);
  const int sizes = static_cast<int>(planSteps(options, 2).size());
  EXPECT_EQ(totals.results, 2 * sizes);
  // Per size and place: the warm-up, the one untimed call before the timed
  // loop (as nccl-tests makes), the timed loop; checked calls out of place
  // only.
  EXPECT_EQ(calls[0], sizes * (options.warmupIters + 1 + options.iters + options.checkIters));
  EXPECT_EQ(calls[1], sizes * (options.warmupIters + 1 + options.iters));
}

// -m: every warm-up and timed iteration asks for aggIters calls in one
// launch; a checked iteration for one, whose result the reference is, and
// so does the untimed call before each timed loop.
TEST(Benchmark, AggregatedIterationsAskForSeveralCallsPerLaunch) {
  Options options = smallRun(Collective::AllReduce);
  options.aggIters = 3;
  TwoRanksOnOneThread two(options);
  Job& job = two.job;
  BenchmarkThread& thread = two.thread;
  int grouped = 0, single = 0;
  thread.launch = [&](const StepPlan& plan, bool inPlace, int calls) {
    ++(calls == 3 ? grouped : single);
    EXPECT_TRUE(calls == 3 || calls == 1) << calls;
    runOnHost(plan, inPlace, job.buffers);
  };
  const BenchmarkTotals totals = runBenchmark(thread);
  EXPECT_EQ(totals.wrongElements, 0);
  const int places = 2 * static_cast<int>(planSteps(options, 2).size());
  EXPECT_EQ(grouped, places * (options.warmupIters + options.iters));
  EXPECT_EQ(single, places * (1 + options.checkIters));
}

// The size column of every row of `text`.
std::vector<std::string> sizeColumn(const std::string& text) {
  std::vector<std::string> sizes;
  for (const std::string& row : rows(text)) {
    std::istringstream fields(row);
    std::string size;
    fields >> size;
    sizes.push_back(size);
  }
  return sizes;
}

// -N 2: each type's sizes are measured, checked and printed twice before
// the next type's; a broken result is caught in every cycle.
TEST(Benchmark, RunCyclesPrintAndCheckEveryCycle) {
  Options options = smallRun(Collective::AllReduce);
  options.types = {ncclFloat32, ncclInt32};
  options.runCycles = 2;
  Capture capture;
  const BenchmarkTotals totals = runSingleThread(options, 3, capture.file, true);
  const std::vector<std::string> once = {"8", "32", "128", "512"};
  std::vector<std::string> expected;
  for (int copy = 0; copy < 4; ++copy) expected.insert(expected.end(), once.begin(), once.end());
  EXPECT_EQ(sizeColumn(capture.text()), expected) << capture.text();
  const std::vector<std::string> table = rows(capture.text());
  EXPECT_THAT(table[7], HasSubstr(" float "));
  EXPECT_THAT(table[8], HasSubstr(" int32 "));
  // One wrong element per place in every row (the first check finds it).
  EXPECT_EQ(totals.results, 16 * 2);
  EXPECT_EQ(totals.wrongElements, 16 * 2);
  EXPECT_EQ(totals.failedChecks, 16 * 2);
}

// -N 0 runs until the process is interrupted: here the launch throws once
// three cycles and a bit have run, and the rows of all three were printed
// as they were measured.
TEST(Benchmark, RunCyclesZeroRepeatsUntilInterrupted) {
  Options options = smallRun(Collective::AllReduce);
  options.types = {ncclFloat32, ncclInt8};
  options.runCycles = 0;
  TwoRanksOnOneThread two(options);
  Capture capture;
  two.thread.out = capture.file;
  struct Interrupted {};
  // Launches per size: both places, each warm-up, the untimed call, the
  // timed loop and the checks.
  const int perSize = 2 * (options.warmupIters + 1 + options.iters + options.checkIters);
  const int interruptAt = 3 * 4 * perSize + 1;
  int launches = 0;
  two.thread.launch = [&](const StepPlan& plan, bool inPlace, int) {
    if (++launches == interruptAt) throw Interrupted{};
    runOnHost(plan, inPlace, two.job.buffers);
  };
  EXPECT_THROW(runBenchmark(two.thread), Interrupted);
  const std::vector<std::string> table = rows(capture.text());
  ASSERT_EQ(table.size(), 12u) << capture.text();
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_THAT(table[i], HasSubstr(" float ")) << "the second type never comes";
    EXPECT_EQ(sizeColumn(capture.text())[i], (std::vector<std::string>{"8", "32", "128", "512"})[i % 4]);
    std::istringstream fields(table[i]);
    std::string field;
    for (int column = 0; column < 9; ++column) fields >> field;
    EXPECT_EQ(field, "0") << table[i];  // out-of-place #wrong: checked, right
  }
}

TEST(Benchmark, NoCheckMeansNA) {
  Options options = smallRun(Collective::AllReduce);
  options.checkIters = 0;
  Capture capture;
  const BenchmarkTotals totals = runSingleThread(options, 2, capture.file, true);
  EXPECT_EQ(totals.wrongElements, 0);
  for (const std::string& row : rows(capture.text())) EXPECT_THAT(row, HasSubstr("N/A"));
}

TEST(Benchmark, SizesWithNothingForEveryRankArePrintedAsZero) {
  Options options = smallRun(Collective::AllGather);
  options.sizes = {4, 8, 2, 0};  // at most 2 floats for 3 ranks
  Capture capture;
  const BenchmarkTotals totals = runSingleThread(options, 3, capture.file);
  EXPECT_EQ(totals.results, 4);  // 2 sizes, both places
  EXPECT_EQ(totals.wrongElements, 0);
  EXPECT_EQ(totals.averageBusbw(), 0.0);
  const std::vector<std::string> table = rows(capture.text());
  ASSERT_EQ(table.size(), 2u);
  for (const std::string& row : table) EXPECT_THAT(row, ::testing::StartsWith("           0             0     float"));
}

TEST(Benchmark, BusBandwidthAverageCoversBothPlaces) {
  const Options options = smallRun(Collective::AllReduce);
  const BenchmarkTotals totals = runSingleThread(options, 2, nullptr);
  EXPECT_EQ(totals.results, 8);
  EXPECT_GT(totals.busbwSum, 0.0);
  EXPECT_DOUBLE_EQ(totals.averageBusbw(), totals.busbwSum / 8);
}

TEST(Benchmark, ThreadsCombineTheirCounts) {
  // Two threads with two ranks each; the reference collective runs once all
  // four ranks have called it, like a real one.
  constexpr int kThreads = 2;
  constexpr int kPerThread = 2;
  Options options = smallRun(Collective::ReduceScatter);
  options.threads = kThreads;
  options.ranksPerThread = kPerThread;
  Job job(kThreads * kPerThread, options.sizes.maxBytes);
  ThreadRankSync sync(kThreads);
  std::barrier<> meet(kThreads);
  std::vector<BenchmarkTotals> totals(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    BenchmarkThread thread;
    thread.options = &options;
    thread.nranks = kThreads * kPerThread;
    thread.participant = t;
    for (int i = 0; i < kPerThread; ++i) {
      const int rank = t * kPerThread + i;
      thread.ranks.push_back({rank, job.buffers[static_cast<std::size_t>(rank)], {}, {}});
    }
    thread.sync = &sync;
    thread.launch = [&, t](const StepPlan& plan, bool inPlace, int) {
      meet.arrive_and_wait();
      if (t == 0) {
        runOnHost(plan, inPlace, job.buffers);
        // Break one element of rank 3 (driven by thread 1).
        poisonBuffer(callPointers(plan, 3, inPlace, job.buffers[3]).recv, 1);
      }
      meet.arrive_and_wait();
    };
    threads.emplace_back(
        [thread, &totals, t] { totals[static_cast<std::size_t>(t)] = runBenchmark(thread); });
  }
  for (std::thread& thread : threads) thread.join();
  long long sizes = 0;  // with elements: a call of count 0 has none to break
  for (const StepPlan& step : planSteps(options, 4)) sizes += step.sizing.bytes(4) > 0 ? 1 : 0;
  // Both threads see the total over all ranks; only thread 1's ranks are
  // wrong, so one thread's check fails per size and place.
  EXPECT_EQ(totals[0].wrongElements, 2 * sizes);
  EXPECT_EQ(totals[1].wrongElements, totals[0].wrongElements);
  EXPECT_EQ(totals[0].failedChecks, 2 * sizes);
  EXPECT_EQ(totals[1].failedChecks, totals[0].failedChecks);
}

TEST(RankSync, CombineTimesPerAverageMode) {
  const std::vector<double> times = {4.0, 1.0, 7.0};
  EXPECT_DOUBLE_EQ(combineTimes(times, AverageMode::Rank0), 4.0);
  EXPECT_DOUBLE_EQ(combineTimes(times, AverageMode::Mean), 4.0);
  EXPECT_DOUBLE_EQ(combineTimes(times, AverageMode::Min), 1.0);
  EXPECT_DOUBLE_EQ(combineTimes(times, AverageMode::Max), 7.0);
  EXPECT_DOUBLE_EQ(combineTimes({1.0, 2.0}, AverageMode::Mean), 1.5);
}

TEST(RankSync, ThreadsGetTheCombinedValue) {
  ThreadRankSync sync(3);
  std::vector<double> maxSeen(3);
  std::vector<long long> sums(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      maxSeen[static_cast<std::size_t>(t)] = sync.combineSeconds(t, 1.0 + t, AverageMode::Max);
      sums[static_cast<std::size_t>(t)] = sync.sumCounts(t, 10 * (t + 1));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(maxSeen, (std::vector<double>{3.0, 3.0, 3.0}));
  EXPECT_EQ(sums, (std::vector<long long>{60, 60, 60}));
}

}  // namespace
}  // namespace hora::perf
