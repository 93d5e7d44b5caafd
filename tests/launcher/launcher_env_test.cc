// env:// init under other launchers than torchrun, end to end: ranks started
// by Open MPI's mpirun, and ranks given only Slurm's variables, as srun
// gives them, each run env_init_all_reduce (an exact all-reduce). Without
// mpirun on the machine the mpirun tests are skipped.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/free_port.h"
#include "support/program_run.h"

namespace hora::launcher_env_test {
namespace {

using ::testing::HasSubstr;
using test_support::programFromEnvironment;
using test_support::ProgramResult;
using test_support::ProgramRun;
using test_support::runProgram;

// Every launcher's rank and rendezvous variables: the tests may themselves
// run under a launcher, and each test sets only the ones it is about.
const std::vector<std::string> kLaunchVariables = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "HORA_COMM_ID",
    "NCCL_COMM_ID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
    "SLURM_NODEID", "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE",
    "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"};

// Ranks talk over loopback, and a broken run fails within seconds.
const std::vector<std::pair<std::string, std::string>> kRankSettings = {{"HORA_SOCKET_IFNAME", "lo"},
                                                                        {"HORA_TIMEOUT", "20"}};

std::string rankProgram() { return programFromEnvironment("ENV_INIT_ALL_REDUCE"); }

// The path of `name` on PATH, or "" when it is not installed.
std::string onPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream directories(path != nullptr ? path : "");
  for (std::string directory; std::getline(directories, directory, ':');) {
    if (directory.empty()) continue;
    const std::filesystem::path candidate = std::filesystem::path(directory) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

ProgramResult runUnderMpirun(const std::string& mpirun, int ranks,
                             const std::vector<std::pair<std::string, std::string>>& passed) {
  ProgramRun run;
  run.arguments = {mpirun, "--allow-run-as-root", "--oversubscribe", "-np", std::to_string(ranks)};
  for (const auto& [name, value] : passed) {
    run.arguments.push_back("-x");
    run.arguments.push_back(name + "=" + value);
  }
  run.arguments.push_back(rankProgram());
  run.unset = kLaunchVariables;
  run.timeoutSeconds = 60;
  return runProgram(run);
}

TEST(LauncherEnvironment, MpirunRanksJoinWithEnvInit) {
  const std::string mpirun = onPath("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  constexpr int kRanks = 3;
  std::vector<std::pair<std::string, std::string>> passed = kRankSettings;
  passed.push_back({"MASTER_ADDR", "127.0.0.1"});
  passed.push_back({"MASTER_PORT", std::to_string(test_support::freeLoopbackPort())});
  const ProgramResult result = runUnderMpirun(mpirun, kRanks, passed);
  ASSERT_EQ(result.exitCode, 0) << result.out << result.err;
  // Nothing but OMPI_COMM_WORLD_* told the ranks who they are.
  for (int rank = 0; rank < kRanks; ++rank)
    EXPECT_THAT(result.out, HasSubstr("rank " + std::to_string(rank) + " of 3: all-reduce exact"));
}

TEST(LauncherEnvironment, MpirunWithoutAnAddressSaysWhatToPass) {
  const std::string mpirun = onPath("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  const ProgramResult result = runUnderMpirun(mpirun, 2, kRankSettings);
  EXPECT_NE(result.exitCode, 0);
  EXPECT_THAT(result.err, HasSubstr("MASTER_PORT is not set"));
  EXPECT_THAT(result.err, HasSubstr("mpirun -x MASTER_ADDR=host -x MASTER_PORT=port"));
}

// What srun gives each task of a one-node step, and nothing of torchrun's.
ProgramRun slurmTask(int task, int tasks, const std::string& nodeList) {
  ProgramRun run;
  run.arguments = {rankProgram()};
  run.unset = kLaunchVariables;
  run.set = kRankSettings;
  run.set.insert(run.set.end(), {{"SLURM_PROCID", std::to_string(task)},
                                 {"SLURM_NTASKS", std::to_string(tasks)},
                                 {"SLURM_LOCALID", std::to_string(task)},
                                 {"SLURM_NODEID", "0"},
                                 {"SLURM_STEP_TASKS_PER_NODE", std::to_string(tasks)},
                                 {"SLURM_STEP_NODELIST", nodeList}});
  run.timeoutSeconds = 60;
  return run;
}

TEST(LauncherEnvironment, SlurmTasksJoinAtTheFirstNodeOfTheStep) {
  constexpr int kTasks = 3;
  const std::string port = std::to_string(test_support::freeLoopbackPort());
  // MASTER_ADDR is unset: rank 0's host is the node list's first. The nodes
  // are named by address so that the test needs no name resolution; the
  // bracket makes it go through the list syntax.
  std::vector<ProgramResult> results(kTasks);
  std::vector<std::thread> tasks;
  for (int task = 0; task < kTasks; ++task) {
    tasks.emplace_back([&, task] {
      ProgramRun run = slurmTask(task, kTasks, "127.0.0.[1-3]");
      run.set.push_back({"MASTER_PORT", port});
      results[task] = runProgram(run);
    });
  }
  for (std::thread& task : tasks) task.join();
  for (int task = 0; task < kTasks; ++task) {
    EXPECT_EQ(results[task].exitCode, 0) << "task " << task << ": " << results[task].err;
    EXPECT_THAT(results[task].out, HasSubstr("rank " + std::to_string(task) + " of 3: all-reduce exact"));
  }
}

TEST(LauncherEnvironment, SlurmWithoutMasterPortSaysWhatToExport) {
  const ProgramResult result = runProgram(slurmTask(0, 2, "node[01-02]"));
  EXPECT_EQ(result.exitCode, 1);
  EXPECT_THAT(result.err, HasSubstr("MASTER_PORT is not set"));
  EXPECT_THAT(result.err, HasSubstr("export MASTER_PORT before srun"));
}

}  // namespace
}  // namespace hora::launcher_env_test
