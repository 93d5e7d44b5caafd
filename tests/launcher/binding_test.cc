// The --bind-to plan on made-up machines: who gets which CPUs, and that no
// rank ever gets a CPU the launcher was not given.
#include "binding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hora::launcher {
namespace {

// `nodes` NUMA nodes of `cores_per_node` cores with `threads` CPUs each,
// numbered as Linux numbers them on most x86 machines: first hardware
// thread of every core, then the second ones.
MachineLayout machine(int nodes, int cores_per_node, int threads = 1) {
  MachineLayout layout;
  const int cores = nodes * cores_per_node;
  for (int c = 0; c < cores; ++c) {
    std::vector<int> cpus;
    for (int t = 0; t < threads; ++t) cpus.push_back(c + t * cores);
    layout.cores.push_back({CpuList(cpus), c / cores_per_node});
  }
  return layout;
}

CpuList all_cpus(const MachineLayout& layout) {
  CpuList all;
  for (const Core& core : layout.cores) all = all.unite(core.cpus);
  return all;
}

std::vector<std::string> cpu_lists(const std::vector<RankBinding>& plan) {
  std::vector<std::string> lists;
  for (const auto& binding : plan) lists.push_back(binding.cpus.to_string());
  return lists;
}

TEST(BindingPlan, OneCoreEachWhenRanksEqualCores) {
  auto m = machine(1, 2);
  auto plan = plan_bindings(m, all_cpus(m), 2, BindTo::Core);
  EXPECT_THAT(cpu_lists(plan), testing::ElementsAre("0", "1"));
  EXPECT_EQ(plan[1].unit, "core 1");
}

TEST(BindingPlan, SharesOfCoresWithTheRemainderToTheFirstRanks) {
  auto m = machine(1, 8);
  EXPECT_THAT(cpu_lists(plan_bindings(m, all_cpus(m), 3, BindTo::Core)),
              testing::ElementsAre("0-2", "3-5", "6-7"));
}

// The report names cores as the machine numbers them, also when only some
// are allowed (taskset -c 1: core 1; taskset -c 0,2-3 on 4 cores: the share
// of two cores is cores 2-3, that of 0 and 2 is "cores 0,2").
TEST(BindingPlan, CoresAreNamedByTheirNumberOnTheMachine) {
  auto m = machine(1, 4);
  EXPECT_EQ(plan_bindings(m, CpuList::parse("1"), 1, BindTo::Core)[0].unit, "core 1");
  auto plan = plan_bindings(m, CpuList::parse("0,2-3"), 2, BindTo::Core);
  EXPECT_EQ(plan[0].unit, "cores 0,2");
  EXPECT_EQ(plan[1].unit, "core 3");
  EXPECT_EQ(plan_bindings(m, CpuList::parse("1-3"), 1, BindTo::Core)[0].unit, "cores 1-3");
}

TEST(BindingPlan, ACoreComesWithAllItsHardwareThreads) {
  auto m = machine(1, 2, 2);  // core 0 = CPUs 0,2; core 1 = CPUs 1,3
  EXPECT_THAT(cpu_lists(plan_bindings(m, all_cpus(m), 2, BindTo::Core)), testing::ElementsAre("0,2", "1,3"));
}

TEST(BindingPlan, NeighbouringRanksShareANumaNode) {
  auto m = machine(2, 4);
  EXPECT_THAT(cpu_lists(plan_bindings(m, all_cpus(m), 4, BindTo::Core)),
              testing::ElementsAre("0-1", "2-3", "4-5", "6-7"));
}

TEST(BindingPlan, MoreRanksThanCoresSpreadOverNumaNodes) {
  auto m = machine(2, 2);
  auto plan = plan_bindings(m, all_cpus(m), 8, BindTo::Core);
  EXPECT_THAT(cpu_lists(plan), testing::ElementsAre("0-1", "0-1", "0-1", "0-1", "2-3", "2-3", "2-3", "2-3"));
  EXPECT_EQ(plan[5].unit, "NUMA node 1");
}

TEST(BindingPlan, NumaBindingGivesWholeNodes) {
  auto m = machine(2, 4);
  EXPECT_THAT(cpu_lists(plan_bindings(m, all_cpus(m), 3, BindTo::Numa)),
              testing::ElementsAre("0-3", "0-3", "4-7"));
}

TEST(BindingPlan, NeverWidensTheLaunchersCpus) {
  auto m = machine(2, 4, 2);
  for (const std::string allowed_text : {"5", "1,9", "0-3,12"}) {
    const CpuList allowed = CpuList::parse(allowed_text);
    for (BindTo bind_to : {BindTo::Core, BindTo::Numa}) {
      for (int ranks : {1, 2, 3, 8, 64}) {
        auto plan = plan_bindings(m, allowed, ranks, bind_to);
        ASSERT_EQ(plan.size(), static_cast<std::size_t>(ranks));
        for (const auto& binding : plan) {
          EXPECT_FALSE(binding.cpus.empty());
          EXPECT_EQ(binding.cpus.intersect(allowed), binding.cpus)
              << "allowed " << allowed_text << ", " << ranks << " ranks, " << bind_to_name(bind_to);
        }
      }
    }
  }
}

TEST(BindingPlan, OneAllowedCpuIsSharedByAllRanks) {
  auto m = machine(1, 2);
  EXPECT_THAT(cpu_lists(plan_bindings(m, CpuList::parse("1"), 2, BindTo::Core)), testing::ElementsAre("1", "1"));
}

TEST(BindingPlan, NoneAndUnknownCpusLeaveRanksAlone) {
  auto m = machine(1, 2);
  for (const auto& binding : plan_bindings(m, all_cpus(m), 2, BindTo::None)) EXPECT_TRUE(binding.cpus.empty());
  // Allowed CPUs the layout does not describe: no guessing.
  for (const auto& binding : plan_bindings(m, CpuList::parse("7"), 2, BindTo::Core))
    EXPECT_TRUE(binding.cpus.empty());
}

TEST(BindTo, ParsesTheThreeNames) {
  EXPECT_EQ(parse_bind_to("core"), BindTo::Core);
  EXPECT_EQ(parse_bind_to("numa"), BindTo::Numa);
  EXPECT_EQ(parse_bind_to("none"), BindTo::None);
  EXPECT_EQ(parse_bind_to("socket"), std::nullopt);
  EXPECT_EQ(parse_bind_to(""), std::nullopt);
}

TEST(CpuListTest, ParsesAndPrintsTheListNotation) {
  EXPECT_EQ(CpuList::parse("0-3,8,10-11").to_string(), "0-3,8,10-11");
  EXPECT_EQ(CpuList::parse("3,1,2,2").to_string(), "1-3");
  EXPECT_EQ(CpuList::parse("").to_string(), "");
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "1,", "1 2"})
    EXPECT_THROW(CpuList::parse(bad), std::invalid_argument) << bad;
}

TEST(CpuListTest, AffinityMaskHoldsExactlyTheCpus) {
  const CpuList list = CpuList::parse("0,5,130");
  auto mask = list.to_affinity_mask();
  auto* set = reinterpret_cast<cpu_set_t*>(mask.data());
  EXPECT_EQ(CPU_COUNT_S(mask.size(), set), 3);
  EXPECT_TRUE(CPU_ISSET_S(130, mask.size(), set));
  EXPECT_FALSE(CPU_ISSET_S(129, mask.size(), set));
}

TEST(CpuListTest, ThisProcessHasAtLeastOneCpu) {
  EXPECT_FALSE(CpuList::of_this_process().empty());
}

}  // namespace
}  // namespace hora::launcher
