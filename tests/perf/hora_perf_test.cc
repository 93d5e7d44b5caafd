// End-to-end tests of the hora-perf binary against the real library: every
// collective must run and check clean with ranks as threads and as hora-run
// processes, and bad command lines must fail with status 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>

#include "support/program_run.h"

namespace hora::perf {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using test_support::programFromEnvironment;
using test_support::ProgramResult;
using test_support::ProgramRun;
using test_support::runProgram;

// Launcher variables that would turn threads mode into process mode (every
// launcher's: the tests may themselves run inside an mpirun or srun job).
const std::vector<std::string> kLauncherVariables = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"};

ProgramResult runPerf(const std::vector<std::string>& arguments, int timeoutSeconds = 60) {
  ProgramRun run;
  run.arguments.push_back(programFromEnvironment("HORA_PERF"));
  run.arguments.insert(run.arguments.end(), arguments.begin(), arguments.end());
  run.unset = kLauncherVariables;
  run.timeoutSeconds = timeoutSeconds;
  return runProgram(run);
}

// The table rows: the lines that do not start with '#'.
std::vector<std::vector<std::string>> tableRows(const ProgramResult& result) {
  std::vector<std::vector<std::string>> rows;
  for (const std::string& line : result.outLines()) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::vector<std::string> fields;
    for (std::string field; in >> field;) fields.push_back(field);
    rows.push_back(fields);
  }
  return rows;
}

// Every row has 13 columns and no wrong element (N/A where unchecked).
void expectCleanTable(const ProgramResult& result, std::size_t expectedRows) {
  EXPECT_EQ(result.exitCode, 0) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("# Out of bounds values : 0 OK"));
  EXPECT_THAT(result.out, HasSubstr("# Avg bus bandwidth    : "));
  const auto rows = tableRows(result);
  EXPECT_EQ(rows.size(), expectedRows) << result.out;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 13u) << result.out;
    EXPECT_EQ(row[8], "0") << result.out;
    EXPECT_TRUE(row[12] == "0" || row[12] == "N/A") << result.out;
  }
}

class EveryCollective : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryCollective, ThreeThreadsCheckClean) {
  const ProgramResult result = runPerf({GetParam(), "-t", "3", "-b", "8", "-e", "1M", "-f", "4", "-c", "1"});
  // 8 B .. 512 KiB in steps of 4 is 9 sizes; where the split collectives
  // cannot give 3 ranks a piece of 16 bytes (8 and 32 bytes) they make calls
  // of count 0, printed as rows of size 0, as nccl-tests does.
  const std::string name = GetParam();
  expectCleanTable(result, 9);
  EXPECT_THAT(result.out, HasSubstr("# Collective test starting: " + name + "_perf\n"));
  EXPECT_THAT(result.out, HasSubstr("#\n# Collective test concluded: " + name + "_perf\n"));
  EXPECT_THAT(result.out, HasSubstr("#  Rank  2 Group  0 Pid"));
}

// NCCL_TESTS_MIN_BW gates the run as in nccl-tests: the verdict follows
// the average, and a miss is exit status 1 with every result right.
TEST(HoraPerf, MinimumBusBandwidthGatesTheExitStatus) {
  auto runWithMinimum = [](const char* minimum) {
    ProgramRun run;
    run.arguments = {programFromEnvironment("HORA_PERF"), "all_reduce", "-t", "2", "-b", "64K", "-e", "64K"};
    run.set = {{"NCCL_TESTS_MIN_BW", minimum}};
    run.unset = kLauncherVariables;
    return runProgram(run);
  };
  const ProgramResult unreachable = runWithMinimum("1e9");
  EXPECT_EQ(unreachable.exitCode, 1) << unreachable.out << unreachable.err;
  EXPECT_THAT(unreachable.out, HasSubstr("# Out of bounds values : 0 OK"));
  EXPECT_THAT(unreachable.out, testing::ContainsRegex("# Avg bus bandwidth    : [0-9.e+-]+ FAILED"));
  const ProgramResult met = runWithMinimum("0");
  EXPECT_EQ(met.exitCode, 0) << met.out << met.err;
  EXPECT_THAT(met.out, testing::ContainsRegex("# Avg bus bandwidth    : [0-9.e+-]+ OK"));
  const ProgramResult bad = runWithMinimum("fast");
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_THAT(bad.err, HasSubstr("NCCL_TESTS_MIN_BW=fast is not a bandwidth"));
}

TEST_P(EveryCollective, TwoProcessesUnderHoraRun) {
  ProgramRun run;
  run.arguments = {programFromEnvironment("HORA_RUN"),
                   "-n",
                   "2",
                   programFromEnvironment("HORA_PERF"),
                   GetParam(),
                   "-b",
                   "64",
                   "-e",
                   "64K",
                   "-f",
                   "8",
                   "-n",
                   "5",
                   "-w",
                   "1"};
  run.unset = kLauncherVariables;
  const ProgramResult result = runProgram(run);
  expectCleanTable(result, 4);
  // Rank 0 alone prints the table, listing both ranks.
  EXPECT_THAT(result.out, HasSubstr("#  Rank  1 Group  0 Pid"));
  std::size_t headers = 0;
  for (const std::string& line : result.outLines()) headers += line.find("out-of-place") != std::string::npos;
  EXPECT_EQ(headers, 1u) << result.out;
}

// Ranks that share CPUs get small shared-memory FIFOs (tuning.h), every
// rank alike: 2 ranks bound to a core each keep 4 MiB; more ranks than the
// machine has CPUs, or ranks left unbound on one CPU, take 512 KiB. Said at
// INFO, which is how this test sees it; results checked either way.
TEST(HoraPerf, RanksSharingCpusGetSmallFifos) {
  auto launch = [](const std::vector<std::string>& launcher) {
    ProgramRun run;
    run.arguments = {programFromEnvironment("HORA_RUN")};
    run.arguments.insert(run.arguments.end(), launcher.begin(), launcher.end());
    for (std::string argument : {programFromEnvironment("HORA_PERF"), std::string("all_reduce"), std::string("-b"),
                                 std::string("1M"), std::string("-e"), std::string("1M"), std::string("-n"),
                                 std::string("2"), std::string("-w"), std::string("1")})
      run.arguments.push_back(argument);
    run.unset = kLauncherVariables;
    run.unset.push_back("HORA_SHM_FIFO_SIZE");
    run.set = {{"NCCL_DEBUG", "INFO"}};
    return runProgram(run);
  };
  const std::string smallFifos = "ranks share CPUs: shared-memory FIFOs of 524288 B (small";
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus >= 2) {
    const ProgramResult own = launch({"-n", "2"});
    expectCleanTable(own, 1);
    EXPECT_THAT(own.err, Not(HasSubstr(smallFifos)));
  }
  const ProgramResult crowded = launch({"-n", std::to_string(cpus + 2)});
  expectCleanTable(crowded, 1);
  EXPECT_THAT(crowded.err, HasSubstr(smallFifos));
}

INSTANTIATE_TEST_SUITE_P(HoraPerf, EveryCollective,
                         ::testing::Values("all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                           "reduce", "sendrecv", "alltoall", "gather", "scatter"));

// -R: buffers from ncclMemAlloc, registered locally (1) or as windows (2),
// with ranks as threads (registered from a thread per rank) and as
// processes; every size checked.
TEST(HoraPerf, RegisteredBuffersCheckClean) {
  for (const char* mode : {"1", "2"}) {
    SCOPED_TRACE(std::string("-R ") + mode);
    expectCleanTable(runPerf({"all_reduce", "-t", "3", "-b", "64", "-e", "1M", "-f", "16", "-R", mode}),
                     4);
    ProgramRun run;
    run.arguments = {programFromEnvironment("HORA_RUN"), "-n", "2", programFromEnvironment("HORA_PERF"),
                     "all_reduce", "-b", "1K", "-e", "4M", "-f", "16", "-n", "3", "-w", "1", "-R", mode};
    run.unset = kLauncherVariables;
    expectCleanTable(runProgram(run), 4);
  }
}

TEST(HoraPerf, GroupedRanksEveryTypeAndOp) {
  // 2 threads driving 2 ranks each, all 12 types x 5 ops at 2 sizes.
  const ProgramResult result = runPerf({"all_reduce", "-t", "2", "-g", "2", "-d", "all", "-o", "all", "-b",
                                        "1K", "-e", "8K", "-f", "8", "-n", "2", "-w", "1"},
                                       120);
  expectCleanTable(result, 12 * 5 * 2);
}

TEST(HoraPerf, EveryRootInTurn) {
  const ProgramResult result = runPerf({"reduce", "-t", "3", "-r", "all", "-o", "prod", "-d", "half", "-b",
                                        "1K", "-e", "1K", "-n", "2", "-c", "2"});
  expectCleanTable(result, 3);
  const auto rows = tableRows(result);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2][4], "2");
}

// -u: buffers aligned to their element only, every type, in and out of
// place, threads and processes alike; results checked.
TEST_P(EveryCollective, UnalignedBuffersCheckClean) {
  const ProgramResult result =
      runPerf({GetParam(), "-t", "3", "-b", "8", "-e", "32K", "-f", "8", "-u", "3", "-d", "all", "-n", "2"});
  // 5 sizes for each of the 12 types.
  expectCleanTable(result, 60);
}

// -u under hora-run and on registered buffers (ncclMemAlloc, one element
// type's offset past the registered start): still every result right.
TEST(HoraPerf, UnalignedBuffersUnderHoraRunAndRegistered) {
  ProgramRun run;
  run.arguments = {programFromEnvironment("HORA_RUN"), "-n", "2", programFromEnvironment("HORA_PERF"),
                   "all_gather", "-b", "64", "-e", "64K", "-f", "32", "-n", "2", "-u", "5", "-d", "all"};
  run.unset = kLauncherVariables;
  expectCleanTable(runProgram(run), 3 * 12);
  expectCleanTable(runPerf({"reduce_scatter", "-t", "2", "-b", "1K", "-e", "1K", "-u", "1024", "-R", "1", "-d",
                            "double", "-o", "all"}),
                   5);
}

// The size column of every row.
std::vector<std::string> sizeColumn(const ProgramResult& result) {
  std::vector<std::string> sizes;
  for (const auto& row : tableRows(result)) sizes.push_back(row.empty() ? "" : row[0]);
  return sizes;
}

// -N 2: as nccl-tests, each root's (type's, op's) sizes run twice over, a
// checked row each time, before the next root's.
TEST(HoraPerf, RunCyclesPrintEveryCycle) {
  const ProgramResult twice =
      runPerf({"all_reduce", "-t", "2", "-b", "1K", "-e", "64K", "-f", "8", "-n", "2", "-N", "2", "-c", "1"});
  expectCleanTable(twice, 6);
  EXPECT_EQ(sizeColumn(twice), (std::vector<std::string>{"1024", "8192", "65536", "1024", "8192", "65536"}));

  const ProgramResult roots = runPerf({"broadcast", "-t", "2", "-r", "all", "-b", "1K", "-e", "2K", "-f", "2",
                                       "-n", "2", "--run_c=3", "-d", "int8"});
  expectCleanTable(roots, 2 * 3 * 2);
  const auto rows = tableRows(roots);
  for (std::size_t i = 0; i < rows.size() && rows[i].size() > 4; ++i) {
    EXPECT_EQ(rows[i][0], i % 2 == 0 ? "1024" : "2048") << roots.out;
    EXPECT_EQ(rows[i][4], i < 6 ? "0" : "1") << roots.out;  // root 0's cycles, then root 1's
  }

  ProgramRun run;
  run.arguments = {programFromEnvironment("HORA_RUN"), "-n", "2", programFromEnvironment("HORA_PERF"),
                   "alltoall", "-b", "1K", "-e", "4K", "-f", "4", "-n", "2", "-N", "2"};
  run.unset = kLauncherVariables;
  const ProgramResult processes = runProgram(run);
  expectCleanTable(processes, 4);
  EXPECT_EQ(sizeColumn(processes), (std::vector<std::string>{"1024", "4096", "1024", "4096"}));
}

// -N 0 repeats until the process is interrupted, printing (and checking)
// every row as it goes; here `timeout` interrupts it.
TEST(HoraPerf, RunCyclesZeroRunsUntilInterrupted) {
  const char* timeoutProgram = "/usr/bin/timeout";
  if (::access(timeoutProgram, X_OK) != 0) GTEST_SKIP() << "no " << timeoutProgram;
  ProgramRun run;
  run.arguments = {timeoutProgram, "4", programFromEnvironment("HORA_PERF"), "all_reduce", "-t", "2",
                   "-b", "1K", "-e", "2K", "-f", "2", "-n", "1", "-N", "0"};
  run.unset = kLauncherVariables;
  const ProgramResult result = runProgram(run);
  EXPECT_EQ(result.exitCode, 124) << "timeout's status: it had to stop hora-perf\n" << result.err;
  EXPECT_THAT(result.out, Not(HasSubstr("# Out of bounds values")));
  const auto rows = tableRows(result);
  EXPECT_GE(rows.size(), 6u) << "at least three cycles in 4 s\n" << result.out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 13u) << result.out;
    EXPECT_EQ(rows[i][0], i % 2 == 0 ? "1024" : "2048");
    EXPECT_EQ(rows[i][8], "0");
    EXPECT_EQ(rows[i][12], "0");
  }
}

// A command line written for nccl-tests that passes its defaults explicitly
// runs, long options shortened as getopt_long allows.
TEST(HoraPerf, NcclTestsDefaultsPassedExplicitlyRun) {
  const ProgramResult result =
      runPerf({"all_reduce", "-t", "2", "--minb", "1.5K", "--maxb=0.5MB", "-f", "2", "-n", "2", "-p", "0", "-y",
               "0", "-T", "0", "-G", "0", "-C", "0", "-S", "0", "-x", "-1", "-D", "0", "-V", "16", "-M", "0", "-I",
               "0", "-K", "0", "-u", "0", "-N", "1"});
  // 1536 B doubled up to 512 KiB: 1536 .. 393216 is 9 sizes.
  expectCleanTable(result, 9);
  EXPECT_THAT(result.out, HasSubstr("minBytes 1536 maxBytes 524288"));
}

// -s: whole sweeps repeated; each row holds the median sweep's nccl-tests
// columns, then the least and greatest time of each place, which bracket
// the median.
TEST(HoraPerf, SweepsPrintTheSpreadAroundTheMedian) {
  for (const char* collective : {"all_reduce", "alltoall"}) {
    SCOPED_TRACE(collective);
    const ProgramResult result =
        runPerf({collective, "-t", "2", "-b", "1K", "-e", "64K", "-f", "8", "-n", "3", "-w", "1", "-s", "3"});
    EXPECT_EQ(result.exitCode, 0) << result.err;
    EXPECT_THAT(result.out, HasSubstr("time over 3 sweeps"));
    const auto rows = tableRows(result);
    ASSERT_EQ(rows.size(), 3u) << result.out;
    for (const auto& row : rows) {
      ASSERT_EQ(row.size(), 17u) << result.out;
      EXPECT_EQ(row[8], "0");
      const double oopTime = std::stod(row[5]);
      EXPECT_LE(std::stod(row[13]), oopTime);
      EXPECT_GE(std::stod(row[14]), oopTime);
      if (row[9] != "N/A") {
        const double ipTime = std::stod(row[9]);
        EXPECT_LE(std::stod(row[15]), ipTime);
        EXPECT_GE(std::stod(row[16]), ipTime);
      } else {
        EXPECT_EQ(row[15], "N/A");
      }
    }
  }
}

// -m: each iteration is a group of N calls per rank, as in nccl-tests; the
// header says so, and the checked results stay right.
TEST(HoraPerf, AggregatedCallsRunInGroups) {
  for (const char* collective : {"all_reduce", "all_gather", "broadcast", "sendrecv"}) {
    SCOPED_TRACE(collective);
    const ProgramResult result =
        runPerf({collective, "-t", "2", "-b", "1K", "-e", "64K", "-f", "8", "-n", "3", "-w", "1", "-m", "4"});
    EXPECT_EQ(result.exitCode, 0) << result.err;
    EXPECT_THAT(result.out, HasSubstr("agg iters: 4 "));
    expectCleanTable(result, 3);
  }
}

TEST(HoraPerf, HelpExitsZero) {
  const ProgramResult result = runPerf({"-h"});
  EXPECT_EQ(result.exitCode, 0);
  EXPECT_THAT(result.out, HasSubstr("Usage: hora-perf <collective>"));
}

TEST(HoraPerf, BadCommandLinesExitTwo) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"all_reduce", "-b", "lots"}, "-b/--minbytes size 'lots' is not a size"},
      {{"all_reduce", "--nope"}, "unknown option '--nope'"},
      {{"allreduce"}, "unknown collective 'allreduce'"},
      {{}, "no collective given"},
      {{"broadcast", "-t", "2", "-r", "2"}, "-r/--root 2 is not a rank: there are 2 ranks"},
      {{"all_reduce", "-b", "1M", "-e", "1K"}, "larger than maximum"},
      {{"all_reduce", "-s", "0"}, "-s/--sweeps"},
      {{"all_reduce", "-s", "3", "-N", "2"}, "-s/--sweeps 3 and -N/--run_cycles 2 do not combine"},
      {{"all_reduce", "-e", "1Mfoo"}, "-e/--maxbytes size '1Mfoo' has 'foo' after its number"},
      {{"all_reduce", "-b", "-1K"}, "-b/--minbytes size '-1K' is negative"},
      {{"all_reduce", "--st", "2"}, "option '--st' is ambiguous"},
      {{"all_reduce", "-G", "1"}, "-G/--cudagraph: hora-perf does not support"},
      {{"all_reduce", "-J", "out.json"}, "-J/--output_file: hora-perf does not support"},
      {{"all_reduce", "-u", "1025"}, "-u/--unalign must be between 0 and 1024"},
      {{"all_reduce", "-m", "0"}, "-m/--agg_iters"},
  };
  for (const auto& [arguments, message] : cases) {
    const ProgramResult result = runPerf(arguments);
    EXPECT_EQ(result.exitCode, 2) << result.err;
    EXPECT_THAT(result.err, HasSubstr(message));
    EXPECT_THAT(result.out, Not(HasSubstr("out-of-place")));
  }
}

TEST(HoraPerf, FailedNcclCallExitsOneNamingRankAndCall) {
  // Rank 1 of a job whose rank 0 never comes: init fails at the deadline.
  ProgramRun run;
  run.arguments = {programFromEnvironment("HORA_PERF"), "all_reduce", "-b", "8", "-e", "8"};
  run.set = {{"RANK", "1"},
             {"WORLD_SIZE", "2"},
             {"MASTER_ADDR", "127.0.0.1"},
             {"MASTER_PORT", "1"},
             {"HORA_TIMEOUT", "2"}};
  const ProgramResult result = runProgram(run);
  EXPECT_EQ(result.exitCode, 1);
  EXPECT_THAT(result.err, HasSubstr("hora-perf: rank 1: ncclCommInitRank failed: "));
  EXPECT_THAT(result.out, Not(HasSubstr("out-of-place")));
}

TEST(HoraPerf, ProcessModeRefusesThreads) {
  ProgramRun run;
  run.arguments = {programFromEnvironment("HORA_PERF"), "all_reduce", "-t", "2"};
  run.set = {{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}};
  const ProgramResult result = runProgram(run);
  EXPECT_EQ(result.exitCode, 2);
  EXPECT_THAT(result.err, HasSubstr("-t and -g must be 1"));
}

}  // namespace
}  // namespace hora::perf
