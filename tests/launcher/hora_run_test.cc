// End-to-end tests of the hora-run binary with small shell programs as ranks.
#include <signal.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cpu_list.h"
#include "launcher_process.h"

namespace hora::launcher::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

// Lines of `lines` that start with `prefix`, in order.
std::vector<std::string> lines_starting_with(const std::vector<std::string>& lines, const std::string& prefix) {
  std::vector<std::string> selected;
  std::copy_if(lines.begin(), lines.end(), std::back_inserter(selected),
               [&](const std::string& line) { return line.rfind(prefix, 0) == 0; });
  return selected;
}

constexpr const char* kPrintEnvironment =
    R"(echo "RANK=$RANK LOCAL_RANK=$LOCAL_RANK WORLD_SIZE=$WORLD_SIZE LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE )"
    R"(GROUP_RANK=$GROUP_RANK GROUP_WORLD_SIZE=$GROUP_WORLD_SIZE MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT")";

TEST(HoraRunTest, HelpPrintsUsageAndSucceeds) {
  LauncherResult result = run_launcher({"--help"});
  EXPECT_EQ(result.exit_code(), 0);
  EXPECT_THAT(result.out, HasSubstr("Usage: hora-run"));
  EXPECT_THAT(result.err, IsEmpty());
}

class HoraRunBadArgumentsTest : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(HoraRunBadArgumentsTest, ExitsWithTwoAndExplains) {
  LauncherResult result = run_launcher(GetParam());
  EXPECT_EQ(result.exit_code(), 2) << result.err;
  EXPECT_THAT(result.err, AllOf(StartsWith("hora-run: "), HasSubstr("--help")));
  EXPECT_THAT(result.out, IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(CommandLines, HoraRunBadArgumentsTest,
                         ::testing::Values(std::vector<std::string>{},                         //
                                           std::vector<std::string>{"-n", "0", "true"},        //
                                           std::vector<std::string>{"-n", "two", "true"},      //
                                           std::vector<std::string>{"--nnodes", "2", "--node-rank", "2", "true"},
                                           std::vector<std::string>{"--bind-to", "socket", "true"},
                                           std::vector<std::string>{"--no-such-flag", "true"}));

// A rank count the user may not run is refused before any rank starts:
// forking until fork fails would fill the machine's process table. The limit
// is lowered for hora-run alone, so a launcher that forked anyway starts
// only a few shells (or fails to fork at all) instead of a flood.
TEST(HoraRunTest, RefusesMoreRanksThanTheUserMayRunBeforeStartingAny) {
  LauncherResult result = run_launcher_with_process_limit({"-n", "9", "sh", "-c", "echo started"}, 8);
  EXPECT_EQ(result.exit_code(), 2) << result.err;
  EXPECT_THAT(result.err, AllOf(StartsWith("hora-run: "), HasSubstr("RLIMIT_NPROC"), HasSubstr("got 9")));
  EXPECT_THAT(result.out, Not(HasSubstr("started")));
}

TEST(HoraRunTest, SetsTheRankEnvironmentOnOneNode) {
  // "sh" without a path: hora-run searches PATH.
  LauncherResult result = run_launcher({"-n", "3", "--tag-output", "sh", "-c", kPrintEnvironment});
  ASSERT_EQ(result.exit_code(), 0) << result.err;

  std::vector<std::string> first = lines_starting_with(result.out_lines(), "[rank 0] ");
  ASSERT_EQ(first.size(), 1u) << result.out;
  // A free port was picked; every rank must be told the same one.
  std::string port = first[0].substr(first[0].find("MASTER_PORT=") + 12);
  ASSERT_FALSE(port.empty());
  int port_number = std::stoi(port);
  EXPECT_GT(port_number, 0);
  EXPECT_LE(port_number, 65535);

  for (int rank = 0; rank < 3; ++rank) {
    std::string r = std::to_string(rank);
    EXPECT_THAT(result.out_lines(),
                Contains("[rank " + r + "] RANK=" + r + " LOCAL_RANK=" + r +
                         " WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 GROUP_RANK=0 GROUP_WORLD_SIZE=1"
                         " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port))
        << result.out;
  }
  EXPECT_EQ(result.out_lines().size(), 3u) << result.out;
}

TEST(HoraRunTest, NumbersRanksOfTheSecondNode) {
  LauncherResult result = run_launcher({"--nnodes", "2", "--node-rank", "1", "--nproc_per_node=2",
                                        "--master-addr=10.0.0.7", "--tag-output", "/bin/sh", "-c", kPrintEnvironment});
  ASSERT_EQ(result.exit_code(), 0) << result.err;
  // Without --master-port, a multi-node job uses torchrun's 29500 on every node.
  EXPECT_THAT(result.out_lines(),
              Contains("[rank 2] RANK=2 LOCAL_RANK=0 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 GROUP_WORLD_SIZE=2"
                       " MASTER_ADDR=10.0.0.7 MASTER_PORT=29500"));
  EXPECT_THAT(result.out_lines(),
              Contains("[rank 3] RANK=3 LOCAL_RANK=1 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 GROUP_WORLD_SIZE=2"
                       " MASTER_ADDR=10.0.0.7 MASTER_PORT=29500"));
  EXPECT_EQ(result.out_lines().size(), 2u) << result.out;
}

TEST(HoraRunTest, UsesTheGivenMasterPort) {
  LauncherResult result = run_launcher({"--master_port", "12345", "/bin/sh", "-c", "echo $MASTER_PORT"});
  ASSERT_EQ(result.exit_code(), 0) << result.err;
  EXPECT_EQ(result.out, "12345\n");
}

TEST(HoraRunTest, WithoutTaggingRanksWriteStraightToTheLaunchersStreams) {
  LauncherResult result = run_launcher({"-n", "2", "/bin/sh", "-c", "echo out $RANK; echo err $RANK >&2"});
  ASSERT_EQ(result.exit_code(), 0) << result.err;
  std::vector<std::string> out = result.out_lines(), err = result.err_lines();
  std::sort(out.begin(), out.end());
  std::sort(err.begin(), err.end());
  EXPECT_THAT(out, ElementsAreArray({"out 0", "out 1"}));
  EXPECT_THAT(err, ElementsAreArray({"err 0", "err 1"}));
}

TEST(HoraRunTest, TaggedOutputKeepsEveryRanksLinesWholeAndInOrder) {
  // Every stdout line is written in two pieces, so a launcher forwarding raw
  // chunks would mix ranks mid-line; the last line has no newline at all.
  const int kRanks = 4, kOutLines = 300, kErrLines = 50;
  const std::string pad(150, 'x');
  std::string script = "i=0; while [ $i -lt " + std::to_string(kOutLines) +
                       " ]; do printf \"out $i of rank $RANK \"; printf \"" + pad +
                       "\\n\"; i=$((i+1)); done; "
                       "i=0; while [ $i -lt " + std::to_string(kErrLines) +
                       " ]; do echo \"err $i of rank $RANK\" >&2; i=$((i+1)); done; "
                       "printf \"last words of rank $RANK\"";
  LauncherResult result = run_launcher({"-n", std::to_string(kRanks), "--tag-output", "/bin/sh", "-c", script});
  ASSERT_EQ(result.exit_code(), 0) << result.err;

  std::vector<std::string> out = result.out_lines(), err = result.err_lines();
  EXPECT_EQ(out.size(), static_cast<std::size_t>(kRanks * (kOutLines + 1)));
  EXPECT_EQ(err.size(), static_cast<std::size_t>(kRanks * kErrLines));
  for (int rank = 0; rank < kRanks; ++rank) {
    std::string r = std::to_string(rank), prefix = "[rank " + r + "] ";
    std::vector<std::string> expected_out, expected_err;
    for (int i = 0; i < kOutLines; ++i) {
      expected_out.push_back(prefix + "out " + std::to_string(i) + " of rank " + r + " " + pad);
    }
    expected_out.push_back(prefix + "last words of rank " + r);
    for (int i = 0; i < kErrLines; ++i) expected_err.push_back(prefix + "err " + std::to_string(i) + " of rank " + r);
    EXPECT_EQ(lines_starting_with(out, prefix), expected_out) << "rank " << rank << " stdout";
    EXPECT_EQ(lines_starting_with(err, prefix), expected_err) << "rank " << rank << " stderr";
  }
}

// stdout and stderr into one pipe (`2>&1`) whose reader is slow, so that
// writes are often partial: every line must still arrive whole. Each rank
// prints to both streams at once, in lines longer than a pipe writes in
// one piece when batched.
TEST(HoraRunTest, StdoutAndStderrIntoOnePipeStillGiveWholeLines) {
  const std::string line(200, 'y');
  const std::string rank_script = "yes " + line + " | head -n 3000 & yes " + line + " | head -n 3000 >&2; wait";
  const std::string command = "exec timeout 60 " + hora_run_path() + " -n 2 --tag-output /bin/sh -c '" +
                              rank_script + "' 2>&1 | (sleep 1; cat)";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[65536];
  std::size_t count;
  while ((count = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, count);
  ASSERT_EQ(::pclose(pipe), 0);
  std::istringstream lines(out);
  int whole = 0, broken = 0;
  for (std::string text; std::getline(lines, text);) {
    if (text == "[rank 0] " + line || text == "[rank 1] " + line) {
      ++whole;
    } else {
      ++broken;
    }
  }
  EXPECT_EQ(whole, 4 * 3000);
  EXPECT_EQ(broken, 0) << "lines were cut or mixed";
}

TEST(HoraRunTest, FailingRankStopsTheOthersQuickly) {
  LauncherResult result = run_launcher(
      {"-n", "3", "/bin/sh", "-c", "if [ \"$RANK\" = 2 ]; then exit 3; fi; sleep 60"});
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code(), 3) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("hora-run: rank 2 (pid "), HasSubstr("exited with status 3"),
                                HasSubstr("stopping the other ranks")));
  EXPECT_LT(result.elapsed, 10s) << "the sleeping ranks were not stopped";
}

// --keep-going: the others run to their end (here they write a line after
// rank 2 has failed), every failure is reported, and the job's exit code is
// the first failure's.
TEST(HoraRunTest, KeepGoingLetsTheOthersFinishAndKeepsTheFirstFailuresCode) {
  LauncherResult result = run_launcher(
      {"-n", "4", "--keep-going", "/bin/sh", "-c",
       "case $RANK in 2) kill -9 $$;; 3) sleep 0.5; exit 5;; esac; sleep 1; echo \"rank $RANK finished\""});
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code(), 128 + 9) << result.err;
  EXPECT_THAT(result.out, AllOf(HasSubstr("rank 0 finished"), HasSubstr("rank 1 finished"))) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("rank 2 (pid "), HasSubstr("was killed by signal 9"),
                                HasSubstr("the other ranks go on (--keep-going)"), HasSubstr("rank 3 (pid "),
                                HasSubstr("exited with status 5")));
  EXPECT_THAT(result.err, Not(HasSubstr("stopping"))) << result.err;
}

TEST(HoraRunTest, ReportsARankKilledByASignal) {
  LauncherResult result = run_launcher(
      {"-n", "2", "/bin/sh", "-c", "if [ \"$RANK\" = 1 ]; then kill -9 $$; fi; sleep 60"});
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code(), 128 + 9) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("rank 1 (pid "), HasSubstr("was killed by signal 9 (Killed)")));
  EXPECT_LT(result.elapsed, 10s);
}

// Rank 2 is killed; ranks 0 and 1 then exit with an error, as survivors
// of a dead peer do. hora-run is held stopped meanwhile, so it reaps all
// three at once (the kernel lists them oldest first): it must still name
// the killed rank as the first failure, and exit with its status.
TEST(HoraRunTest, NamesTheKilledRankWhenItsSurvivorsFailedAtTheSameTime) {
  LauncherProcess launcher({"-n", "3", "/bin/sh", "-c",
                            "if [ \"$RANK\" = 2 ]; then sleep 0.3; kill -9 $$; fi; sleep 0.8; exit 1"});
  std::this_thread::sleep_for(100ms);
  ASSERT_EQ(::kill(launcher.pid(), SIGSTOP), 0);
  std::this_thread::sleep_for(1500ms);  // rank 2 dies at 0.3 s, the others exit at 0.8 s
  ASSERT_EQ(::kill(launcher.pid(), SIGCONT), 0);
  LauncherResult result = launcher.finish(10s);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code(), 128 + 9) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("rank 2 (pid "), HasSubstr("was killed by signal 9")));
  EXPECT_THAT(result.err, Not(HasSubstr("exited with status 1"))) << "a survivor was reported first";
}

// An exited rank's pid is also its process group's number, which the
// launcher may still signal (for processes the rank left behind). So the
// launcher keeps it, as a zombie nobody else can be given the number of,
// until the job is over. Rank 0 exits at once; rank 1 then looks at it
// until it has exited (a zombie) or is gone (reaped).
TEST(HoraRunTest, AnExitedRankKeepsItsPidUntilTheJobEnds) {
  char directory[] = "/tmp/hora-run-test-XXXXXX";
  ASSERT_NE(::mkdtemp(directory), nullptr);
  const std::string pid_file = std::string(directory) + "/rank0.pid";
  LauncherResult result = run_launcher(
      {"-n", "2", "/bin/sh", "-c",
       "if [ \"$RANK\" = 0 ]; then echo $$ > " + pid_file + ".part; mv " + pid_file + ".part " + pid_file +
           "; exit 0; fi; while [ ! -e " + pid_file + " ]; do sleep 0.05; done; read pid < " + pid_file +
           "; for i in $(seq 200); do s=$(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null); "
           "case \"$s\" in Z|'') break;; esac; sleep 0.05; done; echo \"state $s\""});
  std::remove(pid_file.c_str());
  ::rmdir(directory);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code(), 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("state Z")) << "rank 0 was reaped while the job ran: " << result.err;
}

TEST(HoraRunTest, RankIgnoringSigtermIsKilledAfterTheKillTimeout) {
  // Both ranks ignore SIGTERM (the ignoring survives exec) and say so with
  // their pid; the test then kills rank 1, and rank 0 can only be stopped
  // by the SIGKILL that follows the kill timeout.
  LauncherProcess launcher({"-n", "2", "--tag-output", "--kill-timeout", "1", "/bin/sh", "-c",
                            "trap '' TERM; echo ready $$; exec sleep 60"});
  ASSERT_TRUE(launcher.wait_for_stdout("ready", 2, 10s)) << "the ranks never became ready";
  std::string marker = "[rank 1] ready ";
  std::string out = launcher.stdout_so_far();
  std::size_t at = out.find(marker);
  ASSERT_NE(at, std::string::npos) << out;
  pid_t rank1 = std::stoi(out.substr(at + marker.size()));
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);

  LauncherResult result = launcher.finish(10s);
  auto stopped_after = std::chrono::steady_clock::now() - killed_at;
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code(), 128 + SIGKILL) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("rank 1 (pid " + std::to_string(rank1) + ") was killed by signal 9"),
                                HasSubstr("rank 0 (pid "), HasSubstr("within 1 s of SIGTERM; sending SIGKILL")));
  EXPECT_GE(stopped_after, 900ms) << "SIGKILL came before the kill timeout";
  EXPECT_LT(stopped_after, 10s);
}

TEST(HoraRunTest, TimeoutStopsTheJob) {
  LauncherResult result = run_launcher({"-n", "2", "--timeout", "1", "/bin/sh", "-c", "sleep 60"});
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code(), 124) << result.err;
  EXPECT_THAT(result.err, HasSubstr("ran longer than --timeout 1 s"));
  EXPECT_GE(result.elapsed, 900ms);
  EXPECT_LT(result.elapsed, 10s);
}

// Nobody reads hora-run's stdout while the ranks print without end: the
// ranks are held back in their own writes, and hora-run still ends the job
// at --timeout, says so on stderr and exits, instead of waiting in a
// write() for ever.
TEST(HoraRunTest, AStdoutNobodyReadsDoesNotStopTheTimeout) {
  LauncherProcess launcher({"-n", "2", "--tag-output", "--timeout", "2", "/bin/sh", "-c", "exec yes hora"});
  launcher.stop_reading_stdout();
  LauncherResult result = launcher.finish(30s);
  EXPECT_FALSE(result.timed_out) << "hora-run blocked on its stdout";
  EXPECT_EQ(result.exit_code(), 124) << result.err;
  EXPECT_THAT(result.err, HasSubstr("ran longer than --timeout 2 s"));
  EXPECT_LT(result.elapsed, 20s);
}

// The same for a rank that fails: it is reported and the job ends with its
// status, although the other rank's output goes nowhere.
TEST(HoraRunTest, AFailingRankIsReportedWhileNobodyReadsStdout) {
  LauncherProcess launcher({"-n", "2", "--tag-output", "/bin/sh", "-c",
                            "if [ \"$RANK\" = 1 ]; then sleep 1; exit 3; fi; exec yes hora"});
  launcher.stop_reading_stdout();
  LauncherResult result = launcher.finish(30s);
  EXPECT_FALSE(result.timed_out) << "hora-run blocked on its stdout";
  EXPECT_EQ(result.exit_code(), 3) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("rank 1 (pid "), HasSubstr("exited with status 3")));
  EXPECT_LT(result.elapsed, 20s);
}

// The ranks succeed, having printed less than hora-run holds for a slow
// reader; nobody reads. hora-run then waits for the reader: within
// --timeout when given (and the job still succeeded), and until a signal
// that ends it otherwise.
constexpr const char* kPrintALittleAndExit = "head -c 300000 /dev/zero | tr '\\0' x | fold -w 99";

TEST(HoraRunTest, AfterTheJobTheWaitForAReaderEndsAtTheTimeout) {
  LauncherProcess launcher({"-n", "2", "--tag-output", "--timeout", "3", "/bin/sh", "-c", kPrintALittleAndExit});
  launcher.stop_reading_stdout();
  LauncherResult result = launcher.finish(30s);
  EXPECT_FALSE(result.timed_out) << "hora-run waited for its reader beyond --timeout";
  EXPECT_EQ(result.exit_code(), 0) << result.err;
  EXPECT_GE(result.elapsed, 2s);
  EXPECT_LT(result.elapsed, 15s);
}

TEST(HoraRunTest, AfterTheJobTheWaitForAReaderEndsOnSigterm) {
  LauncherProcess launcher({"-n", "2", "--tag-output", "/bin/sh", "-c", kPrintALittleAndExit});
  launcher.stop_reading_stdout();
  std::this_thread::sleep_for(2s);  // the ranks are done; hora-run waits for the reader
  ASSERT_EQ(::kill(launcher.pid(), SIGTERM), 0);
  LauncherResult result = launcher.finish(20s);
  EXPECT_FALSE(result.timed_out) << "SIGTERM did not end hora-run's wait for its reader";
  EXPECT_EQ(result.exit_code(), 128 + SIGTERM) << result.err;
}

// --kill-timeout 0: no SIGTERM first, so a rank that ignores SIGTERM is
// gone at once after another rank fails.
TEST(HoraRunTest, KillTimeoutZeroSendsSigkillAtOnce) {
  LauncherResult result = run_launcher({"-n", "2", "--kill-timeout", "0", "/bin/sh", "-c",
                                        "trap '' TERM; if [ \"$RANK\" = 1 ]; then exit 5; fi; sleep 60"});
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code(), 5) << result.err;
  EXPECT_THAT(result.err, Not(HasSubstr("of SIGTERM")));
  EXPECT_LT(result.elapsed, 10s) << "the rank that ignores SIGTERM was not killed";
}

// As the shell: 127 for a program that is not there, 126 for one that is
// there but cannot be run.
TEST(HoraRunTest, AProgramThatCannotBeRunExitsWith126) {
  LauncherResult result = run_launcher({"-n", "2", "/etc/passwd"});
  EXPECT_EQ(result.exit_code(), 126) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("cannot start '/etc/passwd'"), HasSubstr("Permission denied")));
}

TEST(HoraRunTest, ProgramThatCannotStartIsReported) {
  LauncherResult result = run_launcher({"-n", "2", "/nonexistent/program"});
  EXPECT_EQ(result.exit_code(), 127) << result.err;
  EXPECT_THAT(result.err, AllOf(HasSubstr("cannot start '/nonexistent/program'"), HasSubstr("No such file")));
}

TEST(HoraRunTest, SucceedsOnlyWhenEveryRankSucceeds) {
  EXPECT_EQ(run_launcher({"-n", "3", "true"}).exit_code(), 0);
  EXPECT_NE(run_launcher({"-n", "3", "/bin/sh", "-c", "[ \"$RANK\" != 1 ]"}).exit_code(), 0);
}

class HoraRunSignalTest : public ::testing::TestWithParam<std::pair<int, std::string>> {};

TEST_P(HoraRunSignalTest, ForwardsTheSignalToEveryRank) {
  const auto& [signal_number, trap_name] = GetParam();
  // Each rank traps the signal, says so, and exits 0. It waits in short
  // sleeps, after each of which the shell runs a pending trap: a signal that
  // comes between "ready" and a long `wait` could otherwise go unhandled
  // until that wait ends.
  std::string script = "trap 'echo \"rank $RANK got " + trap_name + "\"; exit 0' " + trap_name +
                       "; echo ready; while :; do sleep 0.1; done";
  // A signal ignored when the shells start stays ignored (POSIX: a
  // non-interactive shell cannot trap it), as SIGHUP is under nohup. The
  // ranks inherit this test's disposition through hora-run: the default.
  struct sigaction inherited {};
  struct sigaction by_default {};
  by_default.sa_handler = SIG_DFL;
  ASSERT_EQ(::sigaction(signal_number, &by_default, &inherited), 0);
  LauncherProcess launcher({"-n", "2", "--tag-output", "/bin/sh", "-c", script});
  ::sigaction(signal_number, &inherited, nullptr);
  ASSERT_TRUE(launcher.wait_for_stdout("ready", 2, 10s)) << "the ranks never became ready";
  ASSERT_EQ(::kill(launcher.pid(), signal_number), 0);
  LauncherResult result = launcher.finish(10s);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code(), 0) << result.err;
  EXPECT_THAT(result.out_lines(), Contains("[rank 0] rank 0 got " + trap_name));
  EXPECT_THAT(result.out_lines(), Contains("[rank 1] rank 1 got " + trap_name));
  EXPECT_THAT(result.err, HasSubstr("received SIG" + trap_name + "; forwarding it to the ranks"));
  EXPECT_LT(result.elapsed, 10s);
}

INSTANTIATE_TEST_SUITE_P(Signals, HoraRunSignalTest,
                         ::testing::Values(std::pair<int, std::string>{SIGTERM, "TERM"},
                                           std::pair<int, std::string>{SIGINT, "INT"},
                                           std::pair<int, std::string>{SIGHUP, "HUP"},
                                           std::pair<int, std::string>{SIGQUIT, "QUIT"},
                                           std::pair<int, std::string>{SIGUSR1, "USR1"},
                                           std::pair<int, std::string>{SIGUSR2, "USR2"},
                                           std::pair<int, std::string>{SIGALRM, "ALRM"}),
                         [](const auto& info) { return info.param.second; });

// Ranks that ignore Ctrl-C (or a batch system's SIGTERM): the second one
// stops them, as after a failure, whichever of the signals that end a job it is.
class HoraRunSecondSignalTest : public ::testing::TestWithParam<std::pair<int, std::string>> {};

TEST_P(HoraRunSecondSignalTest, StopsRanksThatIgnoredTheFirst) {
  const auto& [signal_number, trap_name] = GetParam();
  LauncherProcess launcher({"-n", "2", "--kill-timeout", "1", "/bin/sh", "-c",
                            "trap '' " + trap_name + "; echo ready; exec sleep 60"});
  ASSERT_TRUE(launcher.wait_for_stdout("ready", 2, 10s));
  ASSERT_EQ(::kill(launcher.pid(), signal_number), 0);
  std::this_thread::sleep_for(300ms);
  ASSERT_EQ(::kill(launcher.pid(), signal_number), 0);
  LauncherResult result = launcher.finish(10s);
  EXPECT_FALSE(result.timed_out) << "the ranks were never stopped";
  EXPECT_EQ(result.exit_code(), 128 + signal_number) << result.err;
  EXPECT_THAT(result.err, HasSubstr("received SIG" + trap_name + " again; stopping the ranks"));
  EXPECT_LT(result.elapsed, 10s);
}

INSTANTIATE_TEST_SUITE_P(EndingSignals, HoraRunSecondSignalTest,
                         ::testing::Values(std::pair<int, std::string>{SIGINT, "INT"},
                                           std::pair<int, std::string>{SIGTERM, "TERM"},
                                           std::pair<int, std::string>{SIGHUP, "HUP"},
                                           std::pair<int, std::string>{SIGQUIT, "QUIT"}),
                         [](const auto& info) { return info.param.second; });

// A stopped rank acts on a forwarded signal that ends it: SIGCONT follows.
TEST(HoraRunTest, AStoppedRankStillEndsOnAForwardedSignal) {
  LauncherProcess launcher({"-n", "1", "/bin/sh", "-c", "echo ready; kill -STOP $$; sleep 60"});
  ASSERT_TRUE(launcher.wait_for_stdout("ready", 1, 10s));
  std::this_thread::sleep_for(200ms);  // the rank has stopped itself by now
  ASSERT_EQ(::kill(launcher.pid(), SIGINT), 0);
  LauncherResult result = launcher.finish(10s);
  EXPECT_FALSE(result.timed_out) << "the stopped rank never ended";
  EXPECT_EQ(result.exit_code(), 128 + SIGINT) << result.err;
}

// The pids ranks printed as "ready PID..." so far (each line may name several).
std::vector<pid_t> pids_after_ready(const LauncherProcess& launcher) {
  std::vector<pid_t> pids;
  for (const std::string& line : LauncherResult{0, false, launcher.stdout_so_far(), "", {}}.out_lines()) {
    const std::size_t at = line.find("ready ");
    if (at == std::string::npos) continue;
    std::istringstream numbers(line.substr(at + 6));
    for (pid_t pid; numbers >> pid;) pids.push_back(pid);
  }
  return pids;
}

// The state letter of process `pid` (/proc/PID/stat: R, S, T for stopped...).
char process_state(pid_t pid) {
  std::FILE* file = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (file == nullptr) return '?';
  char text[512] = {};
  const std::size_t length = std::fread(text, 1, sizeof(text) - 1, file);
  std::fclose(file);
  const std::string stat(text, length);
  const std::size_t close = stat.rfind(')');  // the command may hold spaces
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

// Whether every process of `pids` is (`stopped`) or is not stopped by job
// control (state T), within `within`.
bool all_stopped(const std::vector<pid_t>& pids, bool stopped, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (true) {
    if (std::all_of(pids.begin(), pids.end(), [&](pid_t pid) { return (process_state(pid) == 'T') == stopped; }))
      return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

// "pid 123: T, pid 124: S": what a failed all_stopped saw.
std::string describe_states(const std::vector<pid_t>& pids) {
  std::string text;
  for (pid_t pid : pids) text += (text.empty() ? "pid " : ", pid ") + std::to_string(pid) + ": " + process_state(pid);
  return text;
}

// Ctrl-Z pauses the whole job, as it would a torchrun job: the terminal's
// SIGTSTP reaches hora-run's process group only, so hora-run stops the
// ranks' groups and then itself; SIGCONT (fg) continues them all.
TEST(HoraRunTest, SigtstpPausesTheRanksAndSigcontContinuesThem) {
  // Each rank is a shell waiting for a child, both in the rank's process
  // group: the stop must reach the whole tree. The child runs for 6 s: on a
  // loaded machine a shorter one could end before hora-run passes the stop
  // on. It is started in the background on purpose: a shell (dash) starts
  // a foreground command with vfork, and a stop that lands between the
  // vfork and the exec leaves the shell blocked on its stopped child (state
  // D, not T) for as long as the job is paused, which /proc cannot tell
  // from a shell that was never stopped.
  LauncherProcess launcher({"-n", "2", "--tag-output", "/bin/sh", "-c", "sleep 6 & echo ready $$ $!; wait; echo done"});
  ASSERT_TRUE(launcher.wait_for_stdout("ready", 2, 10s));
  const std::vector<pid_t> ranks = pids_after_ready(launcher);  // each rank's shell and its child
  ASSERT_EQ(ranks.size(), 4u) << launcher.stdout_so_far();
  ASSERT_EQ(::kill(launcher.pid(), SIGTSTP), 0);
  EXPECT_TRUE(all_stopped(ranks, true, 5000ms)) << "the ranks were not stopped: " << describe_states(ranks)
                                                 << "; hora-run " << describe_states({launcher.pid()});
  EXPECT_TRUE(all_stopped({launcher.pid()}, true, 5000ms)) << "hora-run did not stop itself";
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(all_stopped(ranks, true, 0ms)) << "a rank went on while the job was paused: " << describe_states(ranks);
  ASSERT_EQ(::kill(launcher.pid(), SIGCONT), 0);
  EXPECT_TRUE(all_stopped(ranks, false, 5000ms)) << "the ranks were not continued: " << describe_states(ranks);
  LauncherResult result = launcher.finish(30s);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code(), 0) << result.err;
  EXPECT_THAT(result.out_lines(), Contains("[rank 0] done"));
  EXPECT_THAT(result.out_lines(), Contains("[rank 1] done"));
  EXPECT_THAT(result.err, HasSubstr("received SIGTSTP; stopping the ranks and the launcher"));
}

// A launcher killed outright takes its ranks with it (they are in process
// groups of their own, so nothing else would reach them).
TEST(HoraRunTest, RanksEndWhenTheLauncherIsKilled) {
  LauncherProcess launcher({"-n", "2", "--tag-output", "/bin/sh", "-c", "echo ready $$; exec sleep 60"});
  ASSERT_TRUE(launcher.wait_for_stdout("ready", 2, 10s));
  const std::vector<pid_t> ranks = pids_after_ready(launcher);
  ASSERT_EQ(ranks.size(), 2u) << launcher.stdout_so_far();
  ASSERT_EQ(::kill(launcher.pid(), SIGKILL), 0);
  launcher.finish(10s);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  auto alive = [&] {
    for (pid_t pid : ranks)
      if (::kill(pid, 0) == 0) return true;
    return false;
  };
  while (alive() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(alive()) << "a rank outlived its launcher";
  for (pid_t pid : ranks) ::kill(pid, SIGKILL);
}

TEST(HoraRunTest, RankKilledByAForwardedSignalFailsTheJob) {
  LauncherProcess launcher({"-n", "2", "/bin/sh", "-c", "echo ready; exec sleep 60"});
  ASSERT_TRUE(launcher.wait_for_stdout("ready", 2, 10s));
  ASSERT_EQ(::kill(launcher.pid(), SIGTERM), 0);
  LauncherResult result = launcher.finish(10s);
  EXPECT_EQ(result.exit_code(), 128 + SIGTERM) << result.err;
  EXPECT_THAT(result.err, HasSubstr("was killed by signal 15 (Terminated)"));
}

}  // namespace
}  // namespace hora::launcher::testing

namespace hora::launcher::testing {
namespace {

// Each rank prints the CPUs the kernel lets it run on, read back from
// /proc/<its pid>/status: "RANK cpu-list".
constexpr const char* kPrintAllowedCpus =
    R"sh(echo "$RANK $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$$/status)")sh";

std::map<int, CpuList> allowed_cpus_per_rank(const LauncherResult& result) {
  std::map<int, CpuList> cpus;
  for (const std::string& line : result.out_lines()) {
    const auto space = line.find(' ');
    if (space == std::string::npos) continue;
    cpus[std::stoi(line.substr(0, space))] = CpuList::parse(line.substr(space + 1));
  }
  return cpus;
}

// Restricts this thread's CPUs, so hora-run started from it inherits them,
// and restores them afterwards.
class ScopedAffinity {
 public:
  explicit ScopedAffinity(const CpuList& cpus) : saved_(CpuList::of_this_process()) { apply(cpus); }
  ~ScopedAffinity() { apply(saved_); }

 private:
  static void apply(const CpuList& cpus) {
    auto mask = cpus.to_affinity_mask();
    ASSERT_EQ(::sched_setaffinity(0, mask.size(), reinterpret_cast<cpu_set_t*>(mask.data())), 0);
  }
  CpuList saved_;
};

TEST(HoraRunBindingTest, RanksGetCoresOfTheirOwnWithinTheLaunchersCpus) {
  const CpuList mine = CpuList::of_this_process();
  if (mine.size() < 2) GTEST_SKIP() << "needs at least two CPUs, this process has " << mine.to_string();
  LauncherResult result = run_launcher({"-n", "2", "--report-bindings", "/bin/sh", "-c", kPrintAllowedCpus});
  ASSERT_EQ(result.exit_code(), 0) << result.err;
  auto cpus = allowed_cpus_per_rank(result);
  ASSERT_EQ(cpus.size(), 2u) << result.out;
  EXPECT_TRUE(cpus[0].intersect(cpus[1]).empty()) << cpus[0].to_string() << " and " << cpus[1].to_string();
  for (auto& [rank, list] : cpus) {
    EXPECT_FALSE(list.empty());
    EXPECT_EQ(list.intersect(mine), list) << "rank " << rank << " got CPUs hora-run was not given";
  }
  EXPECT_THAT(result.err, HasSubstr("rank 0 (local rank 0) bound to CPUs " + cpus[0].to_string()));
  EXPECT_THAT(result.err, HasSubstr("rank 1 (local rank 1) bound to CPUs " + cpus[1].to_string()));
}

TEST(HoraRunBindingTest, NeverWidensANarrowerMask) {
  const CpuList mine = CpuList::of_this_process();
  const CpuList last({mine.cpus().back()});
  LauncherResult result;
  {
    ScopedAffinity narrow(last);
    result = run_launcher({"-n", "3", "/bin/sh", "-c", kPrintAllowedCpus});
  }
  ASSERT_EQ(result.exit_code(), 0) << result.err;
  auto cpus = allowed_cpus_per_rank(result);
  ASSERT_EQ(cpus.size(), 3u) << result.out;
  for (auto& [rank, list] : cpus) EXPECT_EQ(list, last) << "rank " << rank;
}

TEST(HoraRunBindingTest, BindToNoneLeavesTheLaunchersCpus) {
  const CpuList mine = CpuList::of_this_process();
  LauncherResult result = run_launcher({"-n", "2", "--bind-to", "none", "/bin/sh", "-c", kPrintAllowedCpus});
  ASSERT_EQ(result.exit_code(), 0) << result.err;
  for (auto& [rank, list] : allowed_cpus_per_rank(result)) EXPECT_EQ(list, mine) << "rank " << rank;
}

TEST(HoraRunBindingTest, MoreRanksThanCoresAllRunWithinTheLaunchersCpus) {
  const CpuList mine = CpuList::of_this_process();
  const int ranks = static_cast<int>(mine.size()) * 2 + 1;
  LauncherResult result =
      run_launcher({"-n", std::to_string(ranks), "--bind-to", "core", "/bin/sh", "-c", kPrintAllowedCpus});
  ASSERT_EQ(result.exit_code(), 0) << result.err;
  auto cpus = allowed_cpus_per_rank(result);
  ASSERT_EQ(cpus.size(), static_cast<std::size_t>(ranks));
  for (auto& [rank, list] : cpus) {
    EXPECT_FALSE(list.empty());
    EXPECT_EQ(list.intersect(mine), list) << "rank " << rank;
  }
}

}  // namespace
}  // namespace hora::launcher::testing
