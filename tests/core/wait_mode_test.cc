// How a rank decides to wait: from the CPUs of the ranks of its host.
#include "core/wait_mode.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "base/error.h"
#include "core/tuning.h"

namespace hora::core {
namespace {

CpuMask cpus(std::vector<int> list) { return CpuMask::ofCpus(list); }

TEST(WaitModeTest, RanksOnCoresOfTheirOwnSpin) {
  // hora-run's default on 2 cores: one core each.
  std::vector<CpuMask> host{cpus({0}), cpus({1})};
  EXPECT_EQ(chooseWaitMode(host, host[0]), WaitMode::Spin);
  EXPECT_EQ(chooseWaitMode(host, host[1]), WaitMode::Spin);
}

TEST(WaitModeTest, UnboundRanksThatFitTheirCpusSpin) {
  std::vector<CpuMask> host{cpus({0, 1}), cpus({0, 1})};
  EXPECT_EQ(chooseWaitMode(host, host[0]), WaitMode::Spin);
}

TEST(WaitModeTest, MoreRanksThanCpusYield) {
  std::vector<CpuMask> host(8, cpus({0, 1}));
  std::string why;
  EXPECT_EQ(chooseWaitMode(host, host[3], &why), WaitMode::Yield);
  EXPECT_EQ(why, "8 rank(s) of this host may run on this rank's 2 CPU(s)");
}

TEST(WaitModeTest, RanksBoundToOneSharedCoreYield) {
  // taskset -c 0 around the whole job: every rank on CPU 0.
  std::vector<CpuMask> host{cpus({0}), cpus({0})};
  EXPECT_EQ(chooseWaitMode(host, host[0]), WaitMode::Yield);
}

TEST(WaitModeTest, OnlyRanksThatCanUseMyCpusCount) {
  // Four ranks: two share CPU 0, two have CPUs 2 and 3 to themselves.
  std::vector<CpuMask> host{cpus({0}), cpus({0}), cpus({2}), cpus({3})};
  EXPECT_EQ(chooseWaitMode(host, host[0]), WaitMode::Yield);
  EXPECT_EQ(chooseWaitMode(host, host[2]), WaitMode::Spin);
  EXPECT_EQ(chooseWaitMode(host, host[3]), WaitMode::Spin);
}

TEST(WaitModeTest, AnUnknownMaskSpins) {
  std::vector<CpuMask> host{CpuMask{}, cpus({0})};
  EXPECT_EQ(chooseWaitMode(host, host[0]), WaitMode::Spin);
}

TEST(WaitModeTest, MasksCountAndIntersectAcrossWords) {
  CpuMask a = cpus({1, 64, 1023});
  EXPECT_EQ(a.count(), 3);
  EXPECT_TRUE(a.intersects(cpus({1023})));
  EXPECT_FALSE(a.intersects(cpus({0, 63, 65})));
  EXPECT_EQ(cpus({1024, -1}).count(), 0);  // outside the mask: ignored
}

TEST(WaitModeTest, RanksShareCpusWhenAnyRankWouldYield) {
  // Two hosts: on host 1 two ranks have a core each; on host 2, two ranks
  // share one core. Every rank of the job sees the same answer.
  EXPECT_FALSE(ranksShareCpus({1, 1}, {cpus({0}), cpus({1})}));
  EXPECT_FALSE(ranksShareCpus({1, 1, 2, 2}, {cpus({0}), cpus({1}), cpus({0}), cpus({1})}));
  EXPECT_TRUE(ranksShareCpus({1, 1, 2, 2}, {cpus({0}), cpus({1}), cpus({0}), cpus({0})}));
  EXPECT_TRUE(ranksShareCpus(std::vector<std::uint64_t>(8, 7), std::vector<CpuMask>(8, cpus({0, 1}))));
  // Ranks with the same CPU numbers on different hosts do not compete.
  EXPECT_FALSE(ranksShareCpus({1, 2, 3}, {cpus({0}), cpus({0}), cpus({0})}));
  EXPECT_THROW(ranksShareCpus({1}, {cpus({0}), cpus({1})}), Error);
}

TEST(WaitModeTest, ThisThreadHasAtLeastOneCpu) { EXPECT_GE(CpuMask::ofThisThread().count(), 1); }

class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedVariable() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(WaitModeTest, TheFifoSizeIsChosenUnlessSet) {
  EXPECT_EQ(Tuning::fromEnvironment().shmFifoBytes, 0u);  // the communicator chooses
  {
    ScopedVariable fifo("HORA_SHM_FIFO_SIZE", "1M");
    EXPECT_EQ(Tuning::fromEnvironment().shmFifoBytes, std::size_t{1} << 20);
  }
  ScopedVariable tiny("HORA_SHM_FIFO_SIZE", "1K");
  EXPECT_THROW(Tuning::fromEnvironment(), Error);
}

TEST(WaitModeTest, HoraWaitOverridesTheChoice) {
  EXPECT_EQ(Tuning::fromEnvironment().waitMode, WaitModeSetting::Auto);
  {
    ScopedVariable wait("HORA_WAIT", "yield");
    EXPECT_EQ(Tuning::fromEnvironment().waitMode, WaitModeSetting::Yield);
  }
  {
    ScopedVariable wait("HORA_WAIT", "spin");
    EXPECT_EQ(Tuning::fromEnvironment().waitMode, WaitModeSetting::Spin);
  }
  {
    ScopedVariable wait("HORA_WAIT", "sometimes");
    EXPECT_THROW(Tuning::fromEnvironment(), Error);
  }
  {
    ScopedVariable spin("HORA_SPIN_US", "-5");
    EXPECT_THROW(Tuning::fromEnvironment(), Error);
  }
}

}  // namespace
}  // namespace hora::core
