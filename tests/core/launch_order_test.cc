// The launch rule of ranks that share a GPU in one process
// (device/launch_order.h): the rule itself, then a model of the GPU's
// in-order hardware queues on which the rule must never deadlock, while
// launching without a rule can.
#include "device/launch_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <random>
#include <set>
#include <span>
#include <tuple>
#include <vector>

namespace hora::device {
namespace {

TEST(LaunchOrder, AfterACollectiveARankWaitsForItsPeersToStartTheSameOne) {
  const LaunchCount count{3, 2, true};
  const std::vector<std::uint64_t> behind = {2, 1, 2};
  const LaunchWait wait = launchWait(LaunchRule::Started, 0, count, /*ownDone=*/0, behind);
  EXPECT_EQ(wait.kind, LaunchWait::PeerCollective);
  EXPECT_EQ(wait.peer, 1);
  const std::vector<std::uint64_t> started = {2, 2, 3};
  // Its own kernels need not have ended.
  EXPECT_EQ(launchWait(LaunchRule::Started, 0, count, 0, started).kind, LaunchWait::Nothing);
}

TEST(LaunchOrder, AfterPointToPointWorkARankWaitsForItsOwnKernelToEnd) {
  const LaunchCount count{3, 2, false};
  const std::vector<std::uint64_t> started = {2, 2};
  EXPECT_EQ(launchWait(LaunchRule::Started, 0, count, 2, started).kind, LaunchWait::OwnLastKernel);
  EXPECT_EQ(launchWait(LaunchRule::Started, 0, count, 3, started).kind, LaunchWait::Nothing);
  // The first launch waits for nothing.
  EXPECT_EQ(launchWait(LaunchRule::Started, 0, LaunchCount{}, 0, started).kind, LaunchWait::Nothing);
}

TEST(LaunchOrder, TheOtherRulesCountOnlyTheRanksOwnKernels) {
  const LaunchCount count{5, 5, true};
  const std::vector<std::uint64_t> started = {0};
  EXPECT_EQ(launchWait(LaunchRule::None, 0, count, 0, started).kind, LaunchWait::Nothing);
  EXPECT_EQ(launchWait(LaunchRule::Unfinished, 2, count, 3, started).kind, LaunchWait::OwnLastKernel);
  EXPECT_EQ(launchWait(LaunchRule::Unfinished, 2, count, 4, started).kind, LaunchWait::Nothing);
}

TEST(LaunchOrder, TheSettingChoosesTheRule) {
  EXPECT_EQ(launchRuleFromSetting(-1).rule, LaunchRule::Started);  // unset
  EXPECT_EQ(launchRuleFromSetting(0).rule, LaunchRule::None);
  const LaunchRuleChoice two = launchRuleFromSetting(2);
  EXPECT_EQ(two.rule, LaunchRule::Unfinished);
  EXPECT_EQ(two.maxUnfinished, 2u);
}

TEST(LaunchOrder, AGroupChoosesOneRuleForAllItsRanks) {
  const std::vector<long long> unset = {-1, -1, -1};
  EXPECT_EQ(groupLaunchRule(unset, true).rule, LaunchRule::Started);
  // A rank without a start word, or ranks whose settings differ: one
  // unfinished kernel each, which needs no word.
  for (const LaunchRuleChoice& safe : {groupLaunchRule(unset, false), groupLaunchRule({{-1, 0}}, true)}) {
    EXPECT_EQ(safe.rule, LaunchRule::Unfinished);
    EXPECT_EQ(safe.maxUnfinished, 1u);
  }
  EXPECT_EQ(groupLaunchRule({{0, 0}}, false).rule, LaunchRule::None);
  EXPECT_EQ(groupLaunchRule({{3, 3}}, false).maxUnfinished, 3u);
}

// A GPU as the rule sees it: each rank's stream feeds one of a few
// hardware queues, each queue starts only its head, and a head starts only
// once the kernel before it on its stream has ended. A kernel runs its ops
// in order (a launch of several collectives of one group runs them one
// after the other, device_work.h): an op completes, on every kernel that
// takes part in it at once, when each of them has started and reached it
// (every rank for a collective, the two ranks of a send/receive pair). Every
// event (a host launch, a kernel starting, an op completing) is picked at
// random among those possible; the run deadlocks where none is possible
// before the end.
//
// A point-to-point kernel can also be modelled as it runs, a block per
// send or receive, all at once (Launch::blocks): a send's block ends as
// soon as the kernel has started (the peer's FIFO has room), a receive's
// once the peer's send of the same event has been made. The number a
// kernel stores as it ends is stored when all of its blocks have ended
// (DoneWord::LastBlock, recordKernelDone), or, as before, when its first
// block has (DoneWord::FirstBlock).
struct Op {
  int event;       // which collective or pair it belongs to
  bool collective;
  int partner;     // for a pair, a send or a receive
  int direction = 0;  // a block of a point-to-point kernel: +1 a send to partner, -1 a receive from it
};

enum class DoneWord { LastBlock, FirstBlock };

struct Kernel {
  int rank;
  std::vector<Op> ops;
  std::uint64_t sequence;
  std::uint64_t collective;  // the number it records as it starts
  std::size_t at = 0;        // ops completed
  bool started = false;
  bool blocks = false;             // the ops are blocks that run at once
  std::vector<bool> blockEnded = {};  // for blocks
  bool done() const { return at == ops.size(); }
};

// What holds a rank's next launch back: launchWait with a rule, or a
// variant of it.
using LaunchPolicy =
    std::function<LaunchWait(const LaunchCount&, std::uint64_t ownDone, std::span<const std::uint64_t> peersStarted)>;

LaunchPolicy policyOf(LaunchRule rule) {
  return [rule](const LaunchCount& count, std::uint64_t ownDone, std::span<const std::uint64_t> peersStarted) {
    return launchWait(rule, 1, count, ownDone, peersStarted);
  };
}

// How the model numbers collectives for the rule: one by one, as the
// executor does, or (to show why) one number per launch.
enum class Numbering { PerCollective, PerLaunch };

// A launch of one send/receive or of one to several collectives; `waits`:
// the rule holds it back (the executor applies it to every launch; until
// 2026-11-27 only to a call's first, and the tests below show what that
// left open).
struct Launch {
  std::vector<Op> ops;
  bool waits = true;
  bool blocks = false;  // a point-to-point kernel's sends and receives, one block each, at once
};

// A host thread's launches, in its order: (rank, index into that rank's
// program). One thread per rank makes each rank's program in turn; one
// thread for several ranks makes their calls (groups) together.
using Driver = std::vector<std::pair<std::size_t, std::size_t>>;

class QueueModel {
 public:
  // `programs`: each rank's launches, in order; `drivers`: the threads
  // that make them (none given: one per rank).
  QueueModel(std::vector<std::vector<Launch>> programs, int queues, LaunchPolicy policy, std::uint64_t seed,
             Numbering numbering = Numbering::PerCollective, std::vector<Driver> drivers = {})
      : programs_(std::move(programs)), queues_(static_cast<std::size_t>(queues)), policy_(std::move(policy)),
        numbering_(numbering), random_(seed), ranks_(programs_.size()), drivers_(std::move(drivers)) {
    for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r].queue = static_cast<int>(random_() % queues_.size());
    if (drivers_.empty())
      for (std::size_t r = 0; r < programs_.size(); ++r) {
        drivers_.emplace_back();
        for (std::size_t l = 0; l < programs_[r].size(); ++l) drivers_.back().push_back({r, l});
      }
    driven_.assign(drivers_.size(), 0);
  }

  // When a kernel's number is stored as it ends (DoneWord::LastBlock
  // unless set).
  void recordDoneAt(DoneWord word) { doneWord_ = word; }

  // True where every kernel ended; false at a deadlock.
  bool run() {
    for (;;) {
      std::vector<std::function<void()>> possible;
      for (std::size_t d = 0; d < drivers_.size(); ++d)
        if (driven_[d] < drivers_[d].size() && mayLaunch(drivers_[d][driven_[d]].first))
          possible.push_back([this, d] { launch(drivers_[d][driven_[d]++].first); });
      for (auto& queue : queues_)
        if (!queue.empty() && previousEnded(queue.front())) possible.push_back([this, &queue] { start(queue); });
      for (std::size_t k = 0; k < kernels_.size(); ++k) {
        Kernel& kernel = kernels_[k];
        if (!kernel.started || kernel.done()) continue;
        if (kernel.blocks) {
          for (std::size_t b = 0; b < kernel.ops.size(); ++b)
            if (!kernel.blockEnded[b] && blockMayEnd(kernel, kernel.ops[b]))
              possible.push_back([this, k, b] { endBlock(kernels_[k], b); });
        } else if (mayComplete(kernel)) {
          possible.push_back([this, k] { complete(kernels_[k].ops[kernels_[k].at].event); });
        }
      }
      if (possible.empty()) return allEnded();
      possible[random_() % possible.size()]();
    }
  }

 private:
  struct Rank {
    int queue = 0;
    std::size_t next = 0;  // the next launch of its program
    LaunchCount count;
    std::uint64_t done = 0;
    std::uint64_t startedCollective = 0;
    long lastKernel = -1;
  };

  bool mayLaunch(std::size_t r) const {
    const Rank& rank = ranks_[r];
    if (rank.next >= programs_[r].size()) return false;
    if (!programs_[r][rank.next].waits) return true;
    std::vector<std::uint64_t> peers;
    for (std::size_t p = 0; p < ranks_.size(); ++p)
      if (p != r) peers.push_back(ranks_[p].startedCollective);
    return policy_(rank.count, rank.done, peers).kind == LaunchWait::Nothing;
  }
  void launch(std::size_t r) {
    Rank& rank = ranks_[r];
    const Launch& made = programs_[r][rank.next++];
    const std::vector<Op>& ops = made.ops;
    Kernel kernel{static_cast<int>(r), ops, ++rank.count.kernels, 0};
    kernel.blocks = made.blocks;
    kernel.blockEnded.assign(ops.size(), false);
    const bool collective = ops.front().collective;
    if (collective)
      rank.count.collectives += numbering_ == Numbering::PerCollective ? ops.size() : 1;
    if (collective) kernel.collective = rank.count.collectives;
    rank.count.lastWasCollective = collective;
    kernels_.push_back(kernel);
    queues_[static_cast<std::size_t>(rank.queue)].push_back(kernels_.size() - 1);
    previous_.push_back(rank.lastKernel);
    rank.lastKernel = static_cast<long>(kernels_.size() - 1);
  }
  bool previousEnded(std::size_t k) const {
    return previous_[k] < 0 || kernels_[static_cast<std::size_t>(previous_[k])].done();
  }
  void start(std::deque<std::size_t>& queue) {
    Kernel& kernel = kernels_[queue.front()];
    queue.pop_front();
    kernel.started = true;
    Rank& rank = ranks_[static_cast<std::size_t>(kernel.rank)];
    rank.startedCollective = std::max(rank.startedCollective, kernel.collective);
  }
  // Every kernel that takes part in the op `kernel` is at has started and
  // reached it.
  bool mayComplete(const Kernel& kernel) const {
    const Op& op = kernel.ops[kernel.at];
    int needed = op.collective ? static_cast<int>(ranks_.size()) : 2;
    for (const Kernel& other : kernels_)
      if (other.started && !other.blocks && !other.done() && other.ops[other.at].event == op.event) --needed;
    return needed == 0;
  }
  void complete(int event) {
    for (Kernel& kernel : kernels_) {
      if (!kernel.started || kernel.blocks || kernel.done() || kernel.ops[kernel.at].event != event) continue;
      if (++kernel.at == kernel.ops.size()) {
        Rank& rank = ranks_[static_cast<std::size_t>(kernel.rank)];
        rank.done = std::max(rank.done, kernel.sequence);
      }
    }
  }
  // A send's block ends once its kernel runs; a receive's once the peer
  // has made the matching send.
  bool blockMayEnd(const Kernel& kernel, const Op& op) const {
    return op.direction > 0 || sent_.count({op.event, op.partner, kernel.rank}) != 0;
  }
  void endBlock(Kernel& kernel, std::size_t b) {
    const Op& op = kernel.ops[b];
    kernel.blockEnded[b] = true;
    if (op.direction > 0) sent_.insert({op.event, kernel.rank, op.partner});
    ++kernel.at;
    Rank& rank = ranks_[static_cast<std::size_t>(kernel.rank)];
    const bool recorded = doneWord_ == DoneWord::FirstBlock ? b == 0 : kernel.done();
    if (recorded) rank.done = std::max(rank.done, kernel.sequence);
  }
  bool allEnded() const {
    for (std::size_t r = 0; r < ranks_.size(); ++r)
      if (ranks_[r].next < programs_[r].size()) return false;
    return std::all_of(kernels_.begin(), kernels_.end(), [](const Kernel& k) { return k.done(); });
  }

  std::vector<std::vector<Launch>> programs_;
  std::vector<std::deque<std::size_t>> queues_;
  LaunchPolicy policy_;
  Numbering numbering_;
  std::mt19937_64 random_;
  std::vector<Rank> ranks_;
  std::vector<Kernel> kernels_;
  std::vector<long> previous_;  // per kernel: its rank's kernel before it (-1: none)
  std::vector<Driver> drivers_;
  std::vector<std::size_t> driven_;  // per driver: launches made
  DoneWord doneWord_ = DoneWord::LastBlock;
  std::set<std::tuple<int, int, int>> sent_;  // sends made: (event, from, to)
};

// Programs of `events` collectives and, where `pairs`, sends and receives
// between two ranks among them (the others launch nothing for those). Each
// rank cuts its runs of collectives into launches of 1 to `perLaunch` on
// its own, as ranks whose streams differ do. With `unheldLaunches`, some
// launches that follow a collective go out without waiting, as the second
// launch of a call does.
std::vector<std::vector<Launch>> programsFor(int ranks, int events, bool pairs, int perLaunch, bool unheldLaunches,
                                             std::mt19937_64& random) {
  std::vector<std::vector<Op>> ops(static_cast<std::size_t>(ranks));
  for (int e = 0; e < events; ++e) {
    if (pairs && random() % 3 == 0) {
      const int a = static_cast<int>(random() % static_cast<unsigned>(ranks));
      const int b = (a + 1 + static_cast<int>(random() % static_cast<unsigned>(ranks - 1))) % ranks;
      ops[static_cast<std::size_t>(a)].push_back({e, false, b});
      ops[static_cast<std::size_t>(b)].push_back({e, false, a});
    } else {
      for (auto& program : ops) program.push_back({e, true, -1});
    }
  }
  std::vector<std::vector<Launch>> programs(static_cast<std::size_t>(ranks));
  for (std::size_t r = 0; r < ops.size(); ++r) {
    for (const Op& op : ops[r]) {
      auto& launches = programs[r];
      const bool afterCollective = !launches.empty() && launches.back().ops.back().collective;
      const bool joins = op.collective && afterCollective &&
                         static_cast<int>(launches.back().ops.size()) < perLaunch && random() % 2 == 0;
      if (joins) {
        launches.back().ops.push_back(op);
      } else {
        launches.push_back({{op}, !(unheldLaunches && afterCollective && random() % 2 == 0)});
      }
    }
  }
  return programs;
}

int deadlocks(const LaunchPolicy& policy, bool pairs, int runs, int perLaunch = 1,
              Numbering numbering = Numbering::PerCollective, bool unheldLaunches = false) {
  std::mt19937_64 random(12345);
  int deadlocked = 0;
  for (int i = 0; i < runs; ++i) {
    const int ranks = 2 + static_cast<int>(random() % 3);
    const int queues = 1 + static_cast<int>(random() % 2);
    QueueModel model(programsFor(ranks, 12, pairs, perLaunch, unheldLaunches, random), queues, policy, random(),
                     numbering);
    if (!model.run()) ++deadlocked;
  }
  return deadlocked;
}

TEST(LaunchOrderModel, WithoutARuleARankThatRunsAheadCanDeadlockTheQueues) {
  EXPECT_GT(deadlocks(policyOf(LaunchRule::None), false, 400), 0);
}

TEST(LaunchOrderModel, TheStartedRuleNeverDeadlocks) {
  EXPECT_EQ(deadlocks(policyOf(LaunchRule::Started), false, 2000), 0);
  EXPECT_EQ(deadlocks(policyOf(LaunchRule::Started), true, 2000), 0);
}

// Launches of several collectives (a group's, device_work.h), cut by each
// rank on its own: the rule holds because collectives, not launches, are
// numbered; numbered per launch, ranks that cut alike-sized groups
// differently deadlock.
TEST(LaunchOrderModel, TheStartedRuleNeverDeadlocksWithLaunchesOfSeveralCollectives) {
  EXPECT_EQ(deadlocks(policyOf(LaunchRule::Started), false, 2000, 3), 0);
  EXPECT_EQ(deadlocks(policyOf(LaunchRule::Started), true, 2000, 3), 0);
  EXPECT_EQ(deadlocks(policyOf(LaunchRule::Unfinished), true, 2000, 3), 0);
  EXPECT_GT(deadlocks(policyOf(LaunchRule::Started), false, 2000, 3, Numbering::PerLaunch), 0);
}

// Why every launch of a call waits (launch_order.h): a call whose
// collectives need several launches (more than a launch holds, other
// kernels, other streams) that sent all but its first without waiting
// could put one of them into a shared queue in front of a peer's kernel
// that its rank's earlier launch waits for.
TEST(LaunchOrderModel, LaunchesThatDoNotWaitCanDeadlockEvenUnderTheRule) {
  EXPECT_GT(deadlocks(policyOf(LaunchRule::Started), false, 2000, 3, Numbering::PerCollective, true), 0);
}

// Calls made as groups by threads that each drive several ranks (as
// ncclCommInitAll's ranks, one thread for all of them, or a thread for
// some). Each call is 1 to 6 collectives, cut by each rank into launches
// of 1 to 3 on its own, and sometimes a send/receive pair after them (the
// pair's kernel comes after the call's ring launches, as end() makes it),
// or one send/receive pair alone.
enum class GroupLaunching {
  // Each thread makes its ranks' ring launches of a call in the order of
  // their first collectives (nextLaunchOf), every launch waiting, as
  // core::Communicator::executeOnDevices does.
  Interleaved,
  // The same order, but only each rank's first launch of a call waits.
  InterleavedFirstWaits,
  // Rank after rank, only each rank's first launch of a call waiting, as
  // before 2026-11-27.
  RankAfterRank,
};
struct GroupedPrograms {
  std::vector<std::vector<Launch>> programs;
  std::vector<Driver> drivers;
};

GroupedPrograms groupedPrograms(int ranks, int threads, int calls, GroupLaunching how, std::mt19937_64& random) {
  const bool interleaved = how != GroupLaunching::RankAfterRank;
  GroupedPrograms made;
  made.programs.resize(static_cast<std::size_t>(ranks));
  made.drivers.resize(static_cast<std::size_t>(threads));
  std::vector<std::size_t> driverOf(static_cast<std::size_t>(ranks));
  for (std::size_t r = 0; r < driverOf.size(); ++r)
    driverOf[r] = r < static_cast<std::size_t>(threads) ? r : random() % static_cast<std::size_t>(threads);
  std::vector<std::uint64_t> numbered(static_cast<std::size_t>(ranks), 0);  // collectives per rank so far
  int event = 0;
  for (int call = 0; call < calls; ++call) {
    // Per rank: this call's launches (indexes into its program) and the
    // number of each one's first collective.
    std::vector<std::vector<std::pair<std::size_t, std::uint64_t>>> launches(static_cast<std::size_t>(ranks));
    // A pair's kernel: the call's first launch of its two ranks, or after
    // their ring launches (waiting then only where every launch waits).
    auto addPair = [&](bool alone) {
      const int a = static_cast<int>(random() % static_cast<unsigned>(ranks));
      const int b = (a + 1 + static_cast<int>(random() % static_cast<unsigned>(ranks - 1))) % ranks;
      for (const auto& [self, other] : {std::pair{a, b}, std::pair{b, a}}) {
        auto& program = made.programs[static_cast<std::size_t>(self)];
        program.push_back({{{event, false, other}}, alone || how == GroupLaunching::Interleaved});
        launches[static_cast<std::size_t>(self)].push_back({program.size() - 1, kNoRingLaunch});
      }
      ++event;
    };
    if (random() % 4 == 0) {
      addPair(true);
    } else {
      const int collectives = 1 + static_cast<int>(random() % 6);
      for (std::size_t r = 0; r < launches.size(); ++r) {
        auto& program = made.programs[r];
        for (int c = 0; c < collectives;) {
          const int size = std::min(collectives - c, 1 + static_cast<int>(random() % 3));
          Launch launch;
          for (int k = 0; k < size; ++k) launch.ops.push_back({event + c + k, true, -1});
          launch.waits = how == GroupLaunching::Interleaved || c == 0;
          program.push_back(launch);
          launches[r].push_back({program.size() - 1, numbered[r] + 1});
          numbered[r] += static_cast<std::uint64_t>(size);
          c += size;
        }
      }
      event += collectives;
      if (random() % 3 == 0) addPair(false);
    }
    for (std::size_t d = 0; d < made.drivers.size(); ++d) {
      Driver& driver = made.drivers[d];
      std::vector<std::size_t> mine;
      for (std::size_t r = 0; r < driverOf.size(); ++r)
        if (driverOf[r] == d) mine.push_back(r);
      if (!interleaved) {
        for (std::size_t r : mine)
          for (const auto& [index, first] : launches[r]) driver.push_back({r, index});
        continue;
      }
      std::vector<std::size_t> taken(mine.size(), 0);
      std::vector<std::uint64_t> next(mine.size());
      for (;;) {
        for (std::size_t i = 0; i < mine.size(); ++i) {
          const auto& own = launches[mine[i]];
          next[i] = taken[i] < own.size() ? own[taken[i]].second : kNoRingLaunch;
        }
        const std::size_t i = nextLaunchOf(next);
        if (i == mine.size()) break;
        driver.push_back({mine[i], launches[mine[i]][taken[i]++].first});
      }
      // Point-to-point kernels after every ring launch of the group.
      for (std::size_t k = 0; k < mine.size(); ++k)
        for (std::size_t t = taken[k]; t < launches[mine[k]].size(); ++t)
          driver.push_back({mine[k], launches[mine[k]][t].first});
    }
  }
  return made;
}

int groupDeadlocks(GroupLaunching how, int runs, bool oneThread) {
  std::mt19937_64 random(777);
  int deadlocked = 0;
  for (int i = 0; i < runs; ++i) {
    const int ranks = 2 + static_cast<int>(random() % 3);
    const int threads = oneThread ? 1 : 1 + static_cast<int>(random() % static_cast<unsigned>(ranks));
    const int queues = 1 + static_cast<int>(random() % 2);
    GroupedPrograms made = groupedPrograms(ranks, threads, 6, how, random);
    QueueModel model(std::move(made.programs), queues, policyOf(LaunchRule::Started), random(),
                     Numbering::PerCollective, std::move(made.drivers));
    if (!model.run()) ++deadlocked;
  }
  return deadlocked;
}

TEST(LaunchOrder, OneThreadLaunchesItsRanksInTheOrderOfTheirCollectives) {
  const std::vector<std::uint64_t> next = {9, 4, kNoRingLaunch, 4};
  EXPECT_EQ(nextLaunchOf(next), 1u);  // the lowest number, the first on a tie
  const std::vector<std::uint64_t> none = {kNoRingLaunch, kNoRingLaunch};
  EXPECT_EQ(nextLaunchOf(none), 2u);
  EXPECT_EQ(nextLaunchOf(std::span<const std::uint64_t>{}), 0u);
}

TEST(LaunchOrderModel, ThreadsLaunchingSeveralRanksNeverDeadlockInTheOrderOfTheCollectives) {
  EXPECT_EQ(groupDeadlocks(GroupLaunching::Interleaved, 2000, true), 0);
  EXPECT_EQ(groupDeadlocks(GroupLaunching::Interleaved, 2000, false), 0);
}

// Before: a thread made each rank's part of a group in turn, only its first
// launch waiting; a rank's second launch could then stand in a queue in
// front of the first launch of a rank the same thread had yet to make.
TEST(LaunchOrderModel, ThreadsLaunchingRankAfterRankCanDeadlock) {
  EXPECT_GT(groupDeadlocks(GroupLaunching::RankAfterRank, 2000, true), 0);
}

// The order alone is enough for one thread that launches every rank, not
// where other threads launch some: then every launch must wait.
TEST(LaunchOrderModel, InTheOrderOfTheCollectivesEveryLaunchMustStillWait) {
  EXPECT_EQ(groupDeadlocks(GroupLaunching::InterleavedFirstWaits, 2000, true), 0);
  EXPECT_GT(groupDeadlocks(GroupLaunching::InterleavedFirstWaits, 2000, false), 0);
}

TEST(LaunchOrderModel, OneUnfinishedKernelPerRankNeverDeadlocks) {
  EXPECT_EQ(deadlocks(policyOf(LaunchRule::Unfinished), true, 2000), 0);
}

// Each half of the rule is needed: without waiting for the peers' start
// after a collective, or for its own kernel's end after point-to-point
// work, the model deadlocks.
TEST(LaunchOrderModel, EitherHalfOfTheRuleAloneCanDeadlock) {
  const LaunchPolicy started = policyOf(LaunchRule::Started);
  const LaunchPolicy ignoresPeers = [&](const LaunchCount& count, std::uint64_t done,
                                        std::span<const std::uint64_t> peers) {
    return count.lastWasCollective ? LaunchWait{} : started(count, done, peers);
  };
  const LaunchPolicy ignoresOwnEnd = [&](const LaunchCount& count, std::uint64_t done,
                                         std::span<const std::uint64_t> peers) {
    return count.lastWasCollective ? started(count, done, peers) : LaunchWait{};
  };
  EXPECT_GT(deadlocks(ignoresPeers, false, 400), 0);
  EXPECT_GT(deadlocks(ignoresOwnEnd, true, 2000), 0);
}

// Send/receive exchanges between two ranks, then collectives, as a model
// of the point-to-point kernel's blocks: each rank of an exchange launches
// one kernel with a block for its send (block 0, as the plan puts a
// group's first op) and one for its receive; sometimes a rank sends to its
// peer without a receive. Every other event is a collective of every
// rank, and a rank cuts its collectives into launches of 1 to 3.
std::vector<std::vector<Launch>> exchangePrograms(int ranks, int events, std::mt19937_64& random) {
  std::vector<std::vector<Launch>> programs(static_cast<std::size_t>(ranks));
  for (int e = 0; e < events; ++e) {
    if (random() % 2 == 0) {
      const int a = static_cast<int>(random() % static_cast<unsigned>(ranks));
      const int b = (a + 1 + static_cast<int>(random() % static_cast<unsigned>(ranks - 1))) % ranks;
      const bool oneWay = random() % 4 == 0;
      Launch sender{{{e, false, b, +1}}, true, true};
      if (!oneWay) sender.ops.push_back({e, false, b, -1});
      Launch receiver{{{e, false, a, -1}}, true, true};
      if (!oneWay) receiver.ops.insert(receiver.ops.begin(), Op{e, false, a, +1});
      programs[static_cast<std::size_t>(a)].push_back(sender);
      programs[static_cast<std::size_t>(b)].push_back(receiver);
      continue;
    }
    for (auto& program : programs) {
      const bool joins = !program.empty() && !program.back().blocks && program.back().ops.size() < 3 &&
                         random() % 2 == 0;
      if (joins)
        program.back().ops.push_back({e, true, -1});
      else
        program.push_back({{{e, true, -1}}});
    }
  }
  return programs;
}

int exchangeDeadlocks(LaunchRule rule, DoneWord word, int runs) {
  std::mt19937_64 random(4242);
  int deadlocked = 0;
  for (int i = 0; i < runs; ++i) {
    const int ranks = 2 + static_cast<int>(random() % 3);
    const int queues = 1 + static_cast<int>(random() % 2);
    QueueModel model(exchangePrograms(ranks, 10, random), queues, policyOf(rule), random());
    model.recordDoneAt(word);
    if (!model.run()) ++deadlocked;
  }
  return deadlocked;
}

// The point-to-point kernel's end is the end of all of its blocks: a send
// ends at once while the receive beside it still waits for the peer, and a
// rank whose kernel said "ended" at its send's end could launch its next
// kernel into a queue in front of the peer's point-to-point kernel, which
// that receive waits for. Counted over every block, neither rule ever
// deadlocks.
TEST(LaunchOrderModel, AfterSendsAndReceivesTheRulesWaitForEveryBlockToEnd) {
  EXPECT_EQ(exchangeDeadlocks(LaunchRule::Started, DoneWord::LastBlock, 2000), 0);
  EXPECT_EQ(exchangeDeadlocks(LaunchRule::Unfinished, DoneWord::LastBlock, 2000), 0);
  EXPECT_GT(exchangeDeadlocks(LaunchRule::Started, DoneWord::FirstBlock, 2000), 0);
  EXPECT_GT(exchangeDeadlocks(LaunchRule::Unfinished, DoneWord::FirstBlock, 2000), 0);
}

}  // namespace
}  // namespace hora::device
