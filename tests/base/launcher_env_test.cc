// Reading a launcher's variables (src/base/launcher_env.h): which launcher
// wins, what each one's variables mean, Slurm's list syntaxes, and the
// errors for incomplete, malformed and inconsistent values.
#include "base/launcher_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "hora/error.h"

namespace hora::launcher {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Variables = std::map<std::string, std::string>;

Lookup lookupIn(const Variables& variables) {
  return [variables](const char* name) -> const char* {
    auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

// The message of the InvalidArgument error `body` throws ("" and a failure otherwise).
template <typename Body>
std::string errorOf(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::InvalidArgument) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no hora::Error was thrown";
  return "";
}

std::string placementError(const Variables& variables) {
  return errorOf([&] { findPlacement(lookupIn(variables)); });
}

// ------------------------------------------------------------ placement

TEST(LauncherPlacement, NothingSetMeansNoLauncher) {
  EXPECT_FALSE(findPlacement(lookupIn({})).has_value());
  // Neither the rendezvous variables nor a launcher's local rank alone say
  // which rank this is.
  EXPECT_FALSE(findPlacement(lookupIn({{"MASTER_ADDR", "h"}, {"LOCAL_RANK", "0"}, {"SLURM_LOCALID", "0"}})));
  // Empty counts as unset, as for every hora variable.
  EXPECT_FALSE(findPlacement(lookupIn({{"RANK", ""}, {"WORLD_SIZE", ""}})));
  EXPECT_THAT(errorOf([] { requirePlacement(lookupIn({})); }),
              AllOf(HasSubstr("RANK"), HasSubstr("OMPI_COMM_WORLD_RANK"), HasSubstr("PMI_RANK"),
                    HasSubstr("SLURM_PROCID")));
}

TEST(LauncherPlacement, Torchrun) {
  auto placement = findPlacement(lookupIn(
      {{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}}));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->launcher, Launcher::Torchrun);
  EXPECT_EQ(placement->rank, 5);
  EXPECT_EQ(placement->worldSize, 8);
  EXPECT_EQ(placement->localRank, 1);
  EXPECT_EQ(placement->localWorldSize, 4);

  // The local variables are optional.
  placement = findPlacement(lookupIn({{"RANK", "0"}, {"WORLD_SIZE", "1"}}));
  ASSERT_TRUE(placement);
  EXPECT_FALSE(placement->localRank);
  EXPECT_FALSE(placement->localWorldSize);
}

TEST(LauncherPlacement, OpenMpi) {
  auto placement = findPlacement(lookupIn({{"OMPI_COMM_WORLD_RANK", "2"},
                                           {"OMPI_COMM_WORLD_SIZE", "3"},
                                           {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                           {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}}));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->launcher, Launcher::OpenMpi);
  EXPECT_EQ(placement->rank, 2);
  EXPECT_EQ(placement->worldSize, 3);
  EXPECT_EQ(placement->localRank, 0);
  EXPECT_EQ(placement->localWorldSize, 1);
}

TEST(LauncherPlacement, Pmi) {
  auto placement = findPlacement(lookupIn({{"PMI_RANK", "7"}, {"PMI_SIZE", "16"}}));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->launcher, Launcher::Pmi);
  EXPECT_EQ(placement->rank, 7);
  EXPECT_EQ(placement->worldSize, 16);
  EXPECT_FALSE(placement->localRank);
}

TEST(LauncherPlacement, SlurmWithThisNodesEntryOfTheTasksPerNodeList) {
  // Nodes 0-2 run 2 tasks each and node 3 one; this is task 6, node 3's first.
  auto placement = findPlacement(lookupIn({{"SLURM_PROCID", "6"},
                                           {"SLURM_NTASKS", "7"},
                                           {"SLURM_LOCALID", "0"},
                                           {"SLURM_NODEID", "3"},
                                           {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}}));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->launcher, Launcher::Slurm);
  EXPECT_EQ(placement->rank, 6);
  EXPECT_EQ(placement->worldSize, 7);
  EXPECT_EQ(placement->localRank, 0);
  EXPECT_EQ(placement->localWorldSize, 1);

  // The step's list wins over the job's; --ntasks-per-node's single count
  // applies to every node.
  placement = findPlacement(lookupIn({{"SLURM_PROCID", "1"},
                                      {"SLURM_NTASKS", "4"},
                                      {"SLURM_NODEID", "0"},
                                      {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                                      {"SLURM_TASKS_PER_NODE", "8"}}));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->localWorldSize, 2);
  placement = findPlacement(lookupIn({{"SLURM_PROCID", "5"},
                                      {"SLURM_NTASKS", "8"},
                                      {"SLURM_LOCALID", "1"},
                                      {"SLURM_NTASKS_PER_NODE", "4"}}));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->localWorldSize, 4);
}

TEST(LauncherPlacement, PrecedenceIsTorchrunOpenMpiPmiSlurm) {
  const Variables slurm = {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "3"}};
  Variables pmi = slurm;
  pmi.insert({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}});
  Variables openMpi = pmi;
  openMpi.insert({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  Variables torchrun = openMpi;
  torchrun.insert({{"RANK", "0"}, {"WORLD_SIZE", "4"}});

  EXPECT_EQ(findPlacement(lookupIn(slurm))->rank, 3);
  EXPECT_EQ(findPlacement(lookupIn(pmi))->rank, 2);
  EXPECT_EQ(findPlacement(lookupIn(openMpi))->rank, 1);
  auto placement = findPlacement(lookupIn(torchrun));
  EXPECT_EQ(placement->launcher, Launcher::Torchrun);
  EXPECT_EQ(placement->rank, 0);
  // Launchers are not mixed: SLURM_LOCALID is not torchrun's local rank.
  EXPECT_FALSE(placement->localRank);
}

TEST(LauncherPlacement, IncompletePairsAreNamed) {
  EXPECT_THAT(placementError({{"RANK", "0"}}), HasSubstr("RANK is set but WORLD_SIZE is not set"));
  EXPECT_THAT(placementError({{"WORLD_SIZE", "2"}}), HasSubstr("WORLD_SIZE is set but RANK is not set"));
  EXPECT_THAT(placementError({{"OMPI_COMM_WORLD_RANK", "0"}}),
              HasSubstr("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not set"));
  EXPECT_THAT(placementError({{"PMI_SIZE", "2"}}), HasSubstr("PMI_SIZE is set but PMI_RANK is not set"));
  // A half-set launcher is an error even when a later one is complete: a
  // typo must not silently hand the process another launcher's rank.
  EXPECT_THAT(placementError({{"RANK", "1"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}}),
              HasSubstr("WORLD_SIZE is not set"));
}

TEST(LauncherPlacement, GarbageNumbersAreNamedWithTheirValue) {
  for (const char* garbage : {"one", "1x", " 1", "+1", "1.0", "0x1", "-", "99999999999"}) {
    EXPECT_THAT(placementError({{"RANK", garbage}, {"WORLD_SIZE", "2"}}),
                HasSubstr(std::string("RANK='") + garbage + "'"));
    EXPECT_THAT(placementError({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", garbage}}),
                HasSubstr(std::string("SLURM_NTASKS='") + garbage + "'"));
  }
  EXPECT_THAT(placementError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "zero"}}),
              HasSubstr("LOCAL_RANK='zero' is not an integer"));
}

TEST(LauncherPlacement, InconsistentValuesAreErrors) {
  EXPECT_THAT(placementError({{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
              AllOf(HasSubstr("rank 2"), HasSubstr("RANK='2'"), HasSubstr("WORLD_SIZE='2'")));
  EXPECT_THAT(placementError({{"PMI_RANK", "-1"}, {"PMI_SIZE", "2"}}), HasSubstr("rank -1"));
  EXPECT_THAT(placementError({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
              AllOf(HasSubstr("world size 0"), HasSubstr("at least 1")));
  EXPECT_THAT(placementError({{"OMPI_COMM_WORLD_RANK", "0"},
                              {"OMPI_COMM_WORLD_SIZE", "4"},
                              {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                              {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}),
              AllOf(HasSubstr("local rank 2"), HasSubstr("OMPI_COMM_WORLD_LOCAL_SIZE='2'")));
  EXPECT_THAT(placementError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "3"}}),
              AllOf(HasSubstr("LOCAL_WORLD_SIZE='3'"), HasSubstr("more than the world size")));
  EXPECT_THAT(placementError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-1"}}),
              HasSubstr("LOCAL_RANK='-1' is negative"));
  // Slurm: this node's entry must exist and hold this task.
  EXPECT_THAT(placementError({{"SLURM_PROCID", "0"},
                              {"SLURM_NTASKS", "3"},
                              {"SLURM_NODEID", "2"},
                              {"SLURM_TASKS_PER_NODE", "2,1"}}),
              AllOf(HasSubstr("SLURM_NODEID='2'"), HasSubstr("SLURM_TASKS_PER_NODE='2,1'")));
  EXPECT_THAT(placementError({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "3"}, {"SLURM_TASKS_PER_NODE", "2,1"}}),
              HasSubstr("SLURM_NODEID is not set"));
  EXPECT_THAT(placementError({{"SLURM_PROCID", "2"},
                              {"SLURM_NTASKS", "3"},
                              {"SLURM_LOCALID", "1"},
                              {"SLURM_NODEID", "1"},
                              {"SLURM_STEP_TASKS_PER_NODE", "2,1"}}),
              AllOf(HasSubstr("local rank 1"), HasSubstr("SLURM_STEP_TASKS_PER_NODE='2,1'")));
  EXPECT_THAT(placementError({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NTASKS_PER_NODE", "x"}}),
              HasSubstr("SLURM_NTASKS_PER_NODE='x'"));
}

// ------------------------------------------------------- master address

std::optional<MasterAddress> masterOf(const Variables& variables) {
  auto lookup = lookupIn(variables);
  auto placement = findPlacement(lookup);
  return masterAddress(placement ? &*placement : nullptr, lookup);
}

std::string masterError(const Variables& variables) {
  return errorOf([&] { masterOf(variables); });
}

TEST(LauncherMasterAddress, FromMasterAddrAndPort) {
  auto master = masterOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(master);
  EXPECT_EQ(master->host, "10.0.0.1");
  EXPECT_EQ(master->port, 29500);
  // MASTER_ADDR wins over Slurm's node list.
  master = masterOf({{"SLURM_PROCID", "0"},
                     {"SLURM_NTASKS", "2"},
                     {"SLURM_STEP_NODELIST", "node[3-4]"},
                     {"MASTER_ADDR", "head"},
                     {"MASTER_PORT", "1234"}});
  EXPECT_EQ(master->host, "head");
}

TEST(LauncherMasterAddress, SlurmDefaultsToTheFirstNodeOfTheStep) {
  Variables slurm = {{"SLURM_PROCID", "1"},
                     {"SLURM_NTASKS", "2"},
                     {"SLURM_JOB_NODELIST", "gpu[001-016]"},
                     {"MASTER_PORT", "29500"}};
  auto master = masterOf(slurm);
  ASSERT_TRUE(master);
  EXPECT_EQ(master->host, "gpu001");
  EXPECT_EQ(master->port, 29500);
  slurm["SLURM_STEP_NODELIST"] = "gpu[007-008]";
  EXPECT_EQ(masterOf(slurm)->host, "gpu007");
  // The node list is Slurm's: with torchrun's variables (torchrun under
  // srun) rank 0 need not be on the step's first node.
  EXPECT_THAT(masterError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SLURM_STEP_NODELIST", "gpu1"},
                           {"MASTER_PORT", "29500"}}),
              HasSubstr("MASTER_ADDR is not set"));
  EXPECT_THAT(masterError({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "gpu[1-"},
                           {"MASTER_PORT", "29500"}}),
              HasSubstr("SLURM_STEP_NODELIST='gpu[1-'"));
}

TEST(LauncherMasterAddress, CommIdStandsInForMasterPort) {
  EXPECT_FALSE(masterOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"HORA_COMM_ID", "10.0.0.1:4000"}}));
  EXPECT_FALSE(masterOf({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"NCCL_COMM_ID", "h:1"}}));
  EXPECT_FALSE(masterOf({{"MASTER_ADDR", "h"}, {"NCCL_COMM_ID", "h:1"}}));
}

TEST(LauncherMasterAddress, MissingAddressSaysWhatToSetForThisLauncher) {
  EXPECT_THAT(masterError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}),
              AllOf(HasSubstr("MASTER_PORT is not set"), HasSubstr("HORA_COMM_ID")));
  EXPECT_THAT(masterError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}),
              AllOf(HasSubstr("MASTER_ADDR is not set"), HasSubstr("MASTER_PORT")));
  EXPECT_THAT(masterError({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
              AllOf(HasSubstr("MASTER_PORT is not set (nor MASTER_ADDR)"), HasSubstr("-x MASTER_PORT=")));
  EXPECT_THAT(masterError({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}), HasSubstr("mpiexec"));
  EXPECT_THAT(masterError({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "n1"}}),
              AllOf(HasSubstr("MASTER_PORT is not set"), HasSubstr("export MASTER_PORT before srun")));
  EXPECT_THAT(masterError({}), HasSubstr("MASTER_ADDR"));
}

TEST(LauncherMasterAddress, BadPortsAreNamed) {
  for (const char* port : {"0", "65536", "-1", "http", "80x"})
    EXPECT_THAT(masterError({{"MASTER_ADDR", "h"}, {"MASTER_PORT", port}}),
                HasSubstr(std::string("MASTER_PORT='") + port + "'"));
}

// ------------------------------------------------------------ Slurm lists

TEST(SlurmHostList, ExpandsRangesAndKeepsZeroPadding) {
  EXPECT_THAT(expandSlurmHostList("node[01-04,07],gpu5"),
              ElementsAre("node01", "node02", "node03", "node04", "node07", "gpu5"));
  EXPECT_THAT(expandSlurmHostList("n[8-11]"), ElementsAre("n8", "n9", "n10", "n11"));
  EXPECT_THAT(expandSlurmHostList("n[098-101]"), ElementsAre("n098", "n099", "n100", "n101"));
  EXPECT_THAT(expandSlurmHostList("single"), ElementsAre("single"));
  EXPECT_THAT(expandSlurmHostList("[1-2]x"), ElementsAre("1x", "2x"));
  EXPECT_THAT(expandSlurmHostList("a-b.example,c_d"), ElementsAre("a-b.example", "c_d"));
  // Several brackets in one name: every combination, the last one fastest.
  EXPECT_THAT(expandSlurmHostList("rack[1-2]-n[01-02]"),
              ElementsAre("rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"));
}

TEST(SlurmHostList, FirstHostWithoutExpandingTheRest) {
  EXPECT_EQ(firstSlurmHost("node[01-04,07],gpu5"), "node01");
  EXPECT_EQ(firstSlurmHost("gpu5,node[01-04]"), "gpu5");
  EXPECT_EQ(firstSlurmHost("node[007,001-003]"), "node007");  // as written, not sorted
  EXPECT_EQ(firstSlurmHost("rack[3-4]-n[0010-0020]"), "rack3-n0010");
  EXPECT_EQ(firstSlurmHost("n[0-999999999999999]"), "n0");  // too many to expand, fine to name
  EXPECT_EQ(firstSlurmHost("127.0.0.[1-4]"), "127.0.0.1");
}

TEST(SlurmHostList, MalformedListsAreErrorsNamingTheVariable) {
  for (const char* bad : {"", "node[", "node[1-", "node]", "node[]", "node[a-b]", "node[4-1]", "node[1--2]",
                          "node[1,]", "a,,b", "a,", ",a", "node 1", "node[1-2", "n[[1]]"}) {
    EXPECT_THAT(errorOf([&] { firstSlurmHost(bad, "SLURM_JOB_NODELIST"); }), HasSubstr("SLURM_JOB_NODELIST"))
        << "'" << bad << "'";
    EXPECT_THAT(errorOf([&] { expandSlurmHostList(bad, "SLURM_JOB_NODELIST"); }),
                HasSubstr("SLURM_JOB_NODELIST"))
        << "'" << bad << "'";
  }
  EXPECT_THAT(errorOf([] { expandSlurmHostList("n[0-99999999]"); }), HasSubstr("more than"));
  EXPECT_THAT(errorOf([] { expandSlurmHostList("a[1-1024]b[1-1024]c[1-2]"); }), HasSubstr("more than"));
}

TEST(SlurmTaskCounts, ExpandsRepeats) {
  EXPECT_THAT(expandSlurmTaskCounts("2(x3),1"), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(expandSlurmTaskCounts("4"), ElementsAre(4));
  EXPECT_THAT(expandSlurmTaskCounts("1,3(x2),16"), ElementsAre(1, 3, 3, 16));
  EXPECT_THAT(expandSlurmTaskCounts("8(x1)"), ElementsAre(8));
}

TEST(SlurmTaskCounts, MalformedCountsAreErrors) {
  for (const char* bad : {"", "x", "2(3)", "2(x)", "2(x3", "2x3", "(x3)", "2(x0)", "2,,1", "2,", "-1", "2(x-1)",
                          "2(x99999999999)", "1(x2000000)"}) {
    EXPECT_THAT(errorOf([&] { expandSlurmTaskCounts(bad, "SLURM_TASKS_PER_NODE"); }),
                HasSubstr("SLURM_TASKS_PER_NODE"))
        << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace hora::launcher
