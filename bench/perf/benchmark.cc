#include "benchmark.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <string>

#include "data_types.h"
#include "report.h"
#include "value_model.h"

namespace hora::perf {
namespace {

const char* opName(std::optional<ncclRedOp_t> op) {
  if (!op) return "none";
  switch (*op) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    default: return "?";
  }
}

void print(std::FILE* out, const std::string& text) {
  if (out == nullptr) return;
  std::fputs(text.c_str(), out);
  std::fflush(out);
}

void complete(const BenchmarkThread& thread) {
  if (thread.complete) thread.complete();
}

// Times options.iters iterations after options.warmupIters untimed ones
// and one untimed call more (nccl-tests makes that call before every timed
// loop, whatever -w says), each iteration a group of options.aggIters
// calls, and combines the time per call across ranks (nccl-tests divides by
// iterations times calls, too). -z, as nccl-tests: 1 waits for each
// iteration and has the ranks meet, inside the time; 2 only waits; 3 waits,
// stops the clock, and has the ranks meet before the next iteration.
// Otherwise only the last iteration is waited for.
double timeIterations(const BenchmarkThread& thread, const StepPlan& plan, bool inPlace) {
  const Options& options = *thread.options;
  for (int i = 0; i < options.warmupIters; ++i) thread.launch(plan, inPlace, options.aggIters);
  thread.launch(plan, inPlace, 1);
  complete(thread);
  // Start together, so no rank's time includes waiting for a late peer.
  thread.sync->barrier(thread.participant);
  using Clock = std::chrono::steady_clock;
  Clock::duration timed{};
  auto start = Clock::now();
  for (int i = 0; i < options.iters; ++i) {
    thread.launch(plan, inPlace, options.aggIters);
    if (options.blocking != 0) complete(thread);
    if (options.blocking == 1) thread.sync->barrier(thread.participant);
    if (options.blocking == 3) {
      timed += Clock::now() - start;
      thread.sync->barrier(thread.participant);
      start = Clock::now();
    }
  }
  complete(thread);
  timed += Clock::now() - start;
  const std::chrono::duration<double> elapsed = timed;
  const double calls = static_cast<double>(options.iters) * options.aggIters;
  return thread.sync->combineSeconds(thread.participant, elapsed.count() / calls, options.average);
}

// Bytes of either buffer a step uses from its start, in place offsets and
// -u's included: what device mirrors copy.
std::size_t stepBytes(const StepPlan& plan) {
  const std::size_t typeSize = dataTypeInfo(plan.type).size;
  return plan.sizing.bytes(typeSize) + plan.unalignElements * typeSize;
}

// Writes every driven rank's inputs for repetition `rep` into its buffers,
// then waits for every rank to have done so. Without that wait, a rank's
// upload could overlap other ranks' kernels that already wait for it, and
// an upload (a cudaMemcpy from pageable memory) may itself wait for the
// device, for instance when CUDA first allocates its page-locked staging
// memory: ranks of one process on one GPU would then wait for each other
// until their kernels' deadline.
void prepareAll(const BenchmarkThread& thread, const StepPlan& plan, const ValueModel& values, bool inPlace,
                int rep) {
  for (const LocalRank& local : thread.ranks) {
    prepareInputs(plan, values, local.rank, inPlace, local.buffers, rep);
    if (local.upload) local.upload(stepBytes(plan));
  }
  thread.sync->barrier(thread.participant);
}

// Runs up to options.checkIters checked iterations and stops after the
// first that found a wrong element on any rank, as nccl-tests does; sets
// result's wrong (over all ranks, in that check) and failedChecks.
void checkIterations(const BenchmarkThread& thread, const StepPlan& plan, const ValueModel& values, bool inPlace,
                     PlaceResult& result) {
  result.wrong = 0;
  for (int rep = 0; rep < thread.options->checkIters; ++rep) {
    prepareAll(thread, plan, values, inPlace, rep);
    thread.launch(plan, inPlace, 1);  // one call: its result is the reference's
    complete(thread);
    long long wrong = 0;
    for (const LocalRank& local : thread.ranks) {
      if (local.download) local.download(stepBytes(plan));
      wrong += countWrongElements(plan, values, local.rank, inPlace, local.buffers, rep);
    }
    result.wrong = thread.sync->sumCounts(thread.participant, wrong);
    if (*result.wrong == 0) continue;
    result.failedChecks = thread.sync->sumCounts(thread.participant, wrong > 0 ? 1 : 0);
    break;
  }
}

PlaceResult measure(const BenchmarkThread& thread, const StepPlan& plan, bool inPlace) {
  // The op of a collective that does not reduce (sendrecv's) is a name only.
  const bool reduces = collectiveInfo(plan.collective).reduces;
  const ValueModel values(plan.type, reduces ? plan.op : std::nullopt, plan.nranks);
  // Time on well-formed data: garbage could hold NaNs or subnormals, which
  // make host arithmetic slower than real data would.
  prepareAll(thread, plan, values, inPlace, 0);
  PlaceResult result;
  result.seconds = timeIterations(thread, plan, inPlace);
  const std::size_t bytes = plan.sizing.bytes(dataTypeInfo(plan.type).size);
  result.algbw = algorithmBandwidth(bytes, result.seconds);
  result.busbw = result.algbw * busBandwidthFactor(plan.collective, plan.nranks);
  if (thread.options->checkIters > 0 && resultChecked(plan, inPlace)) {
    checkIterations(thread, plan, values, inPlace, result);
  }
  return result;
}

}  // namespace

std::vector<StepSeries> planSeries(const Options& options, int nranks) {
  const CollectiveInfo& info = collectiveInfo(options.collective);
  std::vector<std::optional<ncclRedOp_t>> ops;
  if (rowPerOp(info)) {
    ops.assign(options.ops.begin(), options.ops.end());
  } else {
    ops.push_back(std::nullopt);
  }
  std::vector<int> roots;
  if (!info.rooted) {
    roots.push_back(-1);
  } else if (options.root) {
    roots.push_back(*options.root);
  } else {
    for (int root = 0; root < nranks; ++root) roots.push_back(root);
  }
  const std::vector<std::size_t> sizes = sizeSequence(options.sizes);

  std::vector<StepSeries> series;
  for (ncclDataType_t type : options.types) {
    const std::size_t typeSize = dataTypeInfo(type).size;
    for (const auto& op : ops) {
      for (int root : roots) {
        StepSeries& steps = series.emplace_back();
        for (std::size_t size : sizes) {
          steps.push_back(StepPlan{options.collective, type, op, root, nranks,
                                   sizeCollective(options.collective, size, typeSize, nranks),
                                   static_cast<std::size_t>(options.unalign)});
        }
      }
    }
  }
  return series;
}

std::vector<StepPlan> planSteps(const Options& options, int nranks) {
  const int cycles = std::max(options.runCycles, 1);
  std::vector<StepPlan> steps;
  for (const StepSeries& series : planSeries(options, nranks)) {
    for (int cycle = 0; cycle < cycles; ++cycle) steps.insert(steps.end(), series.begin(), series.end());
  }
  return steps;
}

namespace {

// The results of one step, out of place and in place, over the sweeps.
using StepResults = std::array<std::vector<PlaceResult>, 2>;

void account(BenchmarkTotals& totals, const PlaceResult& result) {
  totals.wrongElements += result.wrong.value_or(0);
  totals.failedChecks += result.failedChecks;
  totals.busbwSum += result.busbw;
  ++totals.results;
}

// One table row: nccl-tests' columns, then `more` (the spread of -s).
void printRow(const BenchmarkThread& thread, const StepPlan& plan, const PlaceResult& outOfPlace,
              const PlaceResult& inPlace, const std::string& more = "") {
  const DataTypeInfo& type = dataTypeInfo(plan.type);
  print(thread.out,
        rowPrefix(plan.sizing.bytes(type.size), plan.sizing.paramCount, type.name, opName(plan.op), plan.root) +
            placeColumns(outOfPlace) + placeColumns(inPlace) + more + "\n");
}

// The result of median time among the sweeps, its wrong counts replaced by
// the totals over every sweep (no wrong element is hidden by the choice).
PlaceResult medianResult(std::vector<PlaceResult> sweeps) {
  std::sort(sweeps.begin(), sweeps.end(),
            [](const PlaceResult& a, const PlaceResult& b) { return a.seconds < b.seconds; });
  PlaceResult median = sweeps[(sweeps.size() - 1) / 2];
  if (median.wrong) {
    long long wrong = 0;
    long long failedChecks = 0;
    for (const PlaceResult& result : sweeps) {
      wrong += result.wrong.value_or(0);
      failedChecks += result.failedChecks;
    }
    median.wrong = wrong;
    median.failedChecks = failedChecks;
  }
  return median;
}

PlaceSpread spreadOf(const std::vector<PlaceResult>& sweeps) {
  PlaceSpread spread;
  if (sweeps.empty()) return spread;
  auto [least, greatest] = std::minmax_element(
      sweeps.begin(), sweeps.end(), [](const PlaceResult& a, const PlaceResult& b) { return a.seconds < b.seconds; });
  spread.minSeconds = least->seconds;
  spread.maxSeconds = greatest->seconds;
  return spread;
}

// nccl-tests' loop: each series (type, op, root) runs its sizes -N times
// over, or with -N 0 until the process is interrupted, and every row is
// printed as soon as it is measured, so an endless run shows its rows.
BenchmarkTotals runCycles(const BenchmarkThread& thread) {
  BenchmarkTotals totals;
  const int cycles = thread.options->runCycles;
  for (const StepSeries& series : planSeries(*thread.options, thread.nranks)) {
    for (int cycle = 0; cycles == 0 || cycle < cycles; ++cycle) {
      for (const StepPlan& plan : series) {
        const PlaceResult outOfPlace = measure(thread, plan, false);
        account(totals, outOfPlace);
        const PlaceResult inPlace = measure(thread, plan, true);
        account(totals, inPlace);
        printRow(thread, plan, outOfPlace, inPlace);
      }
    }
  }
  return totals;
}

// -s: whole sweeps one after the other, so that a slow spell of the
// machine shows as one slow sweep rather than as one slow size; rows are
// printed once every sweep has run. (-N is then 1: options refuse both.)
BenchmarkTotals runSweeps(const BenchmarkThread& thread) {
  BenchmarkTotals totals;
  const std::vector<StepPlan> steps = planSteps(*thread.options, thread.nranks);
  std::vector<StepResults> results(steps.size());
  for (int sweep = 0; sweep < thread.options->sweeps; ++sweep) {
    for (std::size_t i = 0; i < steps.size(); ++i) {
      results[i][0].push_back(measure(thread, steps[i], false));
      results[i][1].push_back(measure(thread, steps[i], true));
    }
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const PlaceResult outOfPlace = medianResult(results[i][0]);
    account(totals, outOfPlace);
    const PlaceResult inPlace = medianResult(results[i][1]);
    account(totals, inPlace);
    printRow(thread, steps[i], outOfPlace, inPlace,
             spreadColumns(spreadOf(results[i][0]), spreadOf(results[i][1])));
  }
  return totals;
}

}  // namespace

BenchmarkTotals runBenchmark(const BenchmarkThread& thread) {
  return thread.options->sweeps > 1 ? runSweeps(thread) : runCycles(thread);
}

}  // namespace hora::perf
