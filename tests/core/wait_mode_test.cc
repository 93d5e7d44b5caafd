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

TEST(WaitModeTest, ThisThreadHasAtLeastOneCpu) { EXPECT_GE(CpuMask::ofThisThread().count(), 1); }

class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedVariable() { ::unsetenv(name_); }

 private:
  const char* name_;
};

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
