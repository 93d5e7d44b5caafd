// Failures and deadlines with ranks as processes: a rank that never joins,
// one killed or stopped in the middle of a collective, an abort from another
// thread, and ranks that leave right after a collective. In every failure
// the surviving ranks must get an error that names a peer, within a bounded
// time, and the communicator must then fail fast with that first error.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "hora_config.h"
#include "rank_process.h"

namespace hora_api_test {
namespace {

using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Lt;
using ::testing::Not;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;


// How a survivor's error names the rank that failed first.
std::string failedFirst(int rank) { return "rank " + std::to_string(rank) + " \\(host [^)]*\\) failed first"; }

long long reportedNumber(ChildProcess& child, const std::string& key) {
  std::string text = child.value(key);
  return text.empty() ? -1 : std::stoll(text);
}

// A rank that joins, then runs large all-reduces until one fails (or
// `iterations` passed), and reports what happened after the failure. With
// `inWindow`, the buffer comes from ncclMemAlloc and is registered as a
// window, so that between ranks of one host the all-reduces run on the
// peers' memory directly (zero copy).
int allReduceUntilFailure(Reporter& reporter, int nranks, int rank, int iterations,
                          bool inWindow = false) {
  ncclComm_t comm = joinCommunicator(reporter, nranks, rank);
  if (comm == nullptr) return 1;
  const std::size_t count = 1 << 20;
  std::vector<float> heap(inWindow ? 0 : count, 1.0f);
  float* data = heap.data();
  if (inWindow) {
    void* shared = nullptr;
    ncclWindow_t window = nullptr;
    if (ncclMemAlloc(&shared, count * sizeof(float)) != ncclSuccess ||
        ncclCommWindowRegister(comm, shared, count * sizeof(float), &window,
                               NCCL_WIN_COLL_SYMMETRIC) != ncclSuccess) {
      reporter.report("window", ncclGetLastError(comm));
      return 1;
    }
    data = static_cast<float*>(shared);
    for (std::size_t i = 0; i < count; ++i) data[i] = 1.0f;
  }
  Outcome first{ncclSuccess, ""};
  for (int i = 0; i < iterations && first.result == ncclSuccess; ++i) {
    if (i == 2) reporter.report("running", "");
    first = outcomeOf(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm, nullptr));
  }
  reportOutcome(reporter, "first", first);
  // Later calls fail at once with the first error.
  auto start = Clock::now();
  reportOutcome(reporter, "again",
                outcomeOf(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm, nullptr)));
  reporter.report("again_ms", std::to_string(millisecondsSince(start)));
  ncclResult_t async = ncclSuccess;
  reportOutcome(reporter, "async_call", outcomeOf(ncclCommGetAsyncError(comm, &async)));
  reporter.report("async", std::to_string(async));
  reportOutcome(reporter, "destroy", outcomeOf(ncclCommDestroy(comm)));
  return 0;
}

// A rank that joins and then waits to be stopped or killed.
int joinAndIdle(Reporter& reporter, int nranks, int rank) {
  if (joinCommunicator(reporter, nranks, rank) == nullptr) return 1;
  for (;;) pause();
}

// Ranks 0 and 2 of 3 start, rank 0 (which hosts the rendezvous root,
// NCCL_COMM_ID) `rootLate` after rank 2; rank 1 never does.
void expectTheMissingRankNamed(milliseconds rootLate) {
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank : {2, 0}) {
    ranks.push_back(std::make_unique<ChildProcess>([=](Reporter& reporter) {
      useRendezvous(port, "2");
      if (rank == 0) std::this_thread::sleep_for(rootLate);
      auto start = Clock::now();
      ncclComm_t comm = joinCommunicator(reporter, 3, rank);
      reporter.report("init_ms", std::to_string(millisecondsSince(start)));
      return comm == nullptr ? 0 : 1;
    }));
  }
  for (auto& child : ranks) {
    ChildExit exit = child->waitExit(seconds(15));
    ASSERT_TRUE(exit.exited && exit.code == 0) << exit.describe() << "; " << reportedOutcome(*child, "init");
    Outcome init = reportedOutcome(*child, "init");
    // A missing rank is a peer failure, reported by the rendezvous to every
    // rank that did arrive, before their own deadline passes.
    EXPECT_EQ(init.result, ncclRemoteError) << init;
    EXPECT_THAT(init.text, HasSubstr("never arrived")) << init;
    EXPECT_THAT(init.text, ContainsRegex("never arrived: 1[^0-9]")) << init;
    EXPECT_THAT(reportedNumber(*child, "init_ms"), Lt(6000)) << "HORA_TIMEOUT is 2 s";
  }
}

TEST(Failure, RankThatNeverJoinsFailsInitNamingIt) { expectTheMissingRankNamed(milliseconds(0)); }

// Rank 2's own deadline passes before the root's: it must still wait for
// the root's answer, which names the missing rank, and not blame rank 0.
TEST(Failure, RankThatNeverJoinsIsNamedWhenTheRootStartedLast) {
  expectTheMissingRankNamed(milliseconds(1500));
}

// Ranks start in any order: rank 2 first, rank 0 (the root's host) 3 s
// later, rank 1 after rank 2's own 5 s deadline but 2 s before the root's
// (room for the rest of init on a loaded machine).
// Every rank arrived within the root's deadline, so init succeeds on all,
// rank 2 included, and a collective runs.
TEST(Failure, RanksThatArriveWithinTheLateRootsDeadlineAllJoin) {
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank : {2, 0, 1}) {
    ranks.push_back(std::make_unique<ChildProcess>([=](Reporter& reporter) {
      useRendezvous(port, "5");
      if (rank == 0) std::this_thread::sleep_for(milliseconds(3000));
      if (rank == 1) std::this_thread::sleep_for(milliseconds(6000));
      ncclComm_t comm = joinCommunicator(reporter, 3, rank);
      if (comm == nullptr) return 1;
      int value = rank + 1;
      reportOutcome(reporter, "all_reduce", outcomeOf(ncclAllReduce(&value, &value, 1, ncclInt32, ncclSum, comm, nullptr)));
      reporter.report("sum", std::to_string(value));
      ncclCommDestroy(comm);
      return 0;
    }));
  }
  for (auto& child : ranks) {
    ChildExit exit = child->waitExit(seconds(25));
    EXPECT_TRUE(exit.exited && exit.code == 0) << exit.describe() << "; " << reportedOutcome(*child, "init");
    EXPECT_EQ(reportedOutcome(*child, "all_reduce").result, ncclSuccess);
    EXPECT_EQ(child->value("sum"), "6");
  }
}

// A rank that joined the rendezvous and died there, while another rank
// has not come yet: the root sees its connection close, and every rank that
// came hears at once which rank failed, not at HORA_TIMEOUT (30 s).
TEST(Failure, RankThatDiesDuringInitIsNamedAtOnce) {
  constexpr int kRanks = 4;
  constexpr int kVictim = 2;
  constexpr int kLate = 3;  // starts only after the victim is dead
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    ranks.push_back(std::make_unique<ChildProcess>([=](Reporter& reporter) {
      useRendezvous(port, "30");
      if (rank == kLate) {
        std::this_thread::sleep_for(seconds(60));
        return 1;
      }
      reporter.report("joining", "");
      auto start = Clock::now();
      ncclComm_t comm = joinCommunicator(reporter, kRanks, rank);
      reporter.report("init_ms", std::to_string(millisecondsSince(start)));
      return comm == nullptr ? 0 : 1;
    }));
  }
  for (int rank = 0; rank < kLate; ++rank)
    ASSERT_TRUE(ranks[rank]->waitFor("joining", seconds(10))) << "rank " << rank;
  // Long enough to have reached the root (rank 0 hosts it; the others retry
  // until it listens).
  std::this_thread::sleep_for(milliseconds(1500));
  ranks[kVictim]->signal(SIGKILL);
  auto killed = Clock::now();
  for (int rank = 0; rank < kLate; ++rank) {
    if (rank == kVictim) continue;
    ChildExit exit = ranks[rank]->waitExit(seconds(20));
    ASSERT_TRUE(exit.exited && exit.code == 0) << "rank " << rank << ": " << exit.describe();
    EXPECT_LT(millisecondsSince(killed), 2500) << "rank " << rank;
    Outcome init = reportedOutcome(*ranks[rank], "init");
    EXPECT_EQ(init.result, ncclRemoteError) << init;
    EXPECT_THAT(init.text, ContainsRegex(failedFirst(kVictim))) << "rank " << rank << ": " << init;
  }
  ranks[kLate]->signal(SIGKILL);
}

// Rank 1 comes to an all-reduce after rank 0 gave up waiting for it
// (HORA_TIMEOUT): rank 0 blames rank 1, and tells it so. Rank 1's next
// call then says that rank 0 stopped the communicator and why, instead of
// blaming rank 0 for closing its connections.
TEST(Failure, ALateRankLearnsWhyTheRankThatWaitedForItStopped) {
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < 2; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=](Reporter& reporter) {
      useRendezvous(port, "2");
      ncclComm_t comm = joinCommunicator(reporter, 2, rank);
      if (comm == nullptr) return 1;
      if (rank == 1) std::this_thread::sleep_for(seconds(4));
      std::vector<float> data(1024, 1.0f);
      Outcome first = outcomeOf(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm, nullptr));
      if (rank == 1) std::this_thread::sleep_for(milliseconds(200));  // rank 0's notice is on its way
      Outcome second = outcomeOf(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm, nullptr));
      reportOutcome(reporter, "first", first);
      reportOutcome(reporter, "second", second);
      if (rank == 0) reporter.report("done", "");
      if (rank == 0) std::this_thread::sleep_for(seconds(4));  // alive while rank 1 runs its calls
      ncclCommDestroy(comm);
      return 0;
    }));
  for (int rank = 0; rank < 2; ++rank) {
    ChildExit exit = ranks[rank]->waitExit(seconds(20));
    ASSERT_TRUE(exit.exited && exit.code == 0) << "rank " << rank << " " << exit.describe();
  }
  Outcome waited = reportedOutcome(*ranks[0], "first");
  EXPECT_EQ(waited.result, ncclRemoteError) << waited;
  EXPECT_THAT(waited.text, AllOf(ContainsRegex(failedFirst(1)), HasSubstr("still running"))) << waited;
  Outcome late = reportedOutcome(*ranks[1], "second");
  EXPECT_EQ(late.result, ncclRemoteError) << late;
  EXPECT_THAT(late.text, AllOf(HasSubstr("stopped by rank 0"), ContainsRegex(failedFirst(1)))) << late;
}

TEST(Failure, MissingRendezvousRootFailsInitNamingIt) {
  // Rank 1 of 2 starts; rank 0, which hosts the rendezvous, never does.
  const int port = freeLoopbackPort();
  ChildProcess rank1([=](Reporter& reporter) {
    useRendezvous(port, "2");
    auto start = Clock::now();
    ncclComm_t comm = joinCommunicator(reporter, 2, 1);
    reporter.report("init_ms", std::to_string(millisecondsSince(start)));
    return comm == nullptr ? 0 : 1;
  });
  ChildExit exit = rank1.waitExit(seconds(15));
  ASSERT_TRUE(exit.exited && exit.code == 0) << exit.describe();
  Outcome init = reportedOutcome(rank1, "init");
  EXPECT_EQ(init.result, ncclRemoteError) << init;
  EXPECT_THAT(init.text, HasSubstr("root")) << init;
  EXPECT_THAT(init.text, HasSubstr("127.0.0.1:" + std::to_string(port))) << init;
  EXPECT_THAT(reportedNumber(rank1, "init_ms"), Lt(6000));
}

// The peer-failure cases run over each transport that links ranks of one
// host: shared memory (the default), TCP, and, where this build has
// libfabric, ofi over its tcp provider (the RDMA credit protocol end to end,
// its lifeline naming the peer).
class PeerFailure : public ::testing::TestWithParam<const char*> {
 protected:
  // The environment of a rank process of this case.
  void prepareRank(int port, const std::string& timeoutSeconds) const {
    useRendezvous(port, timeoutSeconds);
    setEnvironment("HORA_TRANSPORT", GetParam());
    if (std::string(GetParam()) == "ofi") setEnvironment("HORA_OFI_PROVIDER", "tcp");
  }
};

#if HORA_HAVE_OFI
INSTANTIATE_TEST_SUITE_P(Transports, PeerFailure, ::testing::Values("shm", "tcp", "ofi"));
#else
INSTANTIATE_TEST_SUITE_P(Transports, PeerFailure, ::testing::Values("shm", "tcp"));
#endif

TEST_P(PeerFailure, RanksThatExitRightAfterACollectiveLeaveTheOthersUnharmed) {
  // A collective returns on a rank once that rank's part is done: its data
  // may still be on its way to a slower peer. A program that destroys its
  // communicator and exits at once (init, all-reduce, destroy, exit) must
  // not make that peer fail.
  constexpr int kRanks = 3;
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < kRanks; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=, this](Reporter& reporter) {
      prepareRank(port, "10");
      ncclComm_t comm = joinCommunicator(reporter, kRanks, rank);
      if (comm == nullptr) return 1;
      long long value = 1LL << (10 * rank);
      Outcome allReduce = outcomeOf(ncclAllReduce(&value, &value, 1, ncclInt64, ncclSum, comm, nullptr));
      Outcome destroy = outcomeOf(ncclCommDestroy(comm));  // at once: the peers may still be reading
      reportOutcome(reporter, "allreduce", allReduce);
      reportOutcome(reporter, "destroy", destroy);
      reporter.report("sum", std::to_string(value));
      return 0;
    }));
  for (int rank = 0; rank < kRanks; ++rank) {
    ChildExit exit = ranks[rank]->waitExit(seconds(15));
    ASSERT_TRUE(exit.exited && exit.code == 0) << "rank " << rank << " " << exit.describe();
    EXPECT_EQ(reportedOutcome(*ranks[rank], "allreduce").result, ncclSuccess)
        << "rank " << rank << ": " << reportedOutcome(*ranks[rank], "allreduce");
    EXPECT_EQ(ranks[rank]->value("sum"), std::to_string(1LL + (1LL << 10) + (1LL << 20))) << "rank " << rank;
  }
}

// Four ranks run all-reduces; rank 2 is killed in the middle. The others
// must fail within a second with an error naming rank 2 as the first to
// fail (rank 0 only sees its neighbours close after they failed), and stay
// failed.
void expectKilledRankFailsTheOthersPromptly(const std::function<void(int port)>& prepareRank,
                                            bool inWindow) {
  constexpr int kRanks = 4;
  constexpr int kVictim = 2;
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < kRanks; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=](Reporter& reporter) {
      prepareRank(port);
      return allReduceUntilFailure(reporter, kRanks, rank, 100000, inWindow);
    }));
  ASSERT_TRUE(ranks[kVictim]->waitFor("running", seconds(20)))
      << "rank " << kVictim << " did not start its all-reduces: " << reportedOutcome(*ranks[kVictim], "init");
  ranks[kVictim]->signal(SIGKILL);
  auto killed = Clock::now();
  for (int rank = 0; rank < kRanks; ++rank) {
    if (rank == kVictim) continue;
    ChildProcess& survivor = *ranks[rank];
    ASSERT_TRUE(survivor.waitFor("first_result", seconds(10))) << "rank " << rank << " hangs";
    // The connection closes when the process dies: no need to wait for
    // HORA_TIMEOUT. (Within a second on a quiet machine; the bound leaves
    // room for a loaded one.)
    EXPECT_LT(millisecondsSince(killed), 2500) << "rank " << rank;
    ChildExit exit = survivor.waitExit(seconds(10));
    ASSERT_TRUE(exit.exited && exit.code == 0) << "rank " << rank << ": " << exit.describe();

    Outcome first = reportedOutcome(survivor, "first");
    EXPECT_EQ(first.result, ncclRemoteError) << first;
    EXPECT_THAT(first.text, ContainsRegex(failedFirst(kVictim))) << "rank " << rank << ": " << first;
    Outcome again = reportedOutcome(survivor, "again");
    EXPECT_EQ(again.result, first.result) << again;
    EXPECT_THAT(again.text, HasSubstr("earlier error")) << again;
    // The first error's own text, after the function name.
    EXPECT_THAT(again.text, HasSubstr(first.text.substr(first.text.find(": ") + 2))) << again;
    EXPECT_LT(reportedNumber(survivor, "again_ms"), 500);
    Outcome async = reportedOutcome(survivor, "async_call");
    EXPECT_EQ(async.result, ncclSuccess);
    EXPECT_EQ(reportedNumber(survivor, "async"), first.result) << "ncclCommGetAsyncError";
    // What a watchdog that polls the state reads next (PyTorch's does).
    EXPECT_THAT(async.text, AllOf(HasSubstr("ncclCommGetAsyncError"), ContainsRegex(failedFirst(kVictim))))
        << "ncclGetLastError after ncclCommGetAsyncError";
    EXPECT_EQ(reportedOutcome(survivor, "destroy").result, ncclSuccess) << "destroy after an error";
  }
}

TEST_P(PeerFailure, RankKilledMidCollectiveFailsTheOthersPromptly) {
  expectKilledRankFailsTheOthersPromptly([this](int port) { prepareRank(port, "5"); }, false);
}

// The same while the ranks reduce in each other's memory (windows): the
// survivors keep the dead rank's memory mapped, so they cannot crash, and
// they learn of the death from its connections.
TEST(Failure, RankKilledMidZeroCopyAllReduceFailsTheOthersPromptly) {
  expectKilledRankFailsTheOthersPromptly(
      [](int port) {
        useRendezvous(port, "5");
        setEnvironment("HORA_TRANSPORT", "shm");
      },
      true);
}

// A rank that dies after init, before the connections opened on first use
// (those outside the ring): the survivors learn it at once from the
// operating system (a refused connection, a process that is gone), not at
// HORA_TIMEOUT. Well after the death, each survivor exchanges a message
// with the dead rank both ways (one direction is outside the ring of
// 0 -> 1 -> 2 -> 0 for each survivor), so neither depends on the other.
TEST_P(PeerFailure, RankDeadBeforeFirstUseIsFoundAtOnce) {
  constexpr int kRanks = 3;
  constexpr int kVictim = 2;
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < kRanks; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=, this](Reporter& reporter) {
      prepareRank(port, "30");
      if (rank == kVictim) return joinAndIdle(reporter, kRanks, rank);
      ncclComm_t comm = joinCommunicator(reporter, kRanks, rank);
      if (comm == nullptr) return 1;
      std::this_thread::sleep_for(milliseconds(1500));  // the victim is dead by then
      long long out = rank, in = -1;
      auto start = Clock::now();
      ncclGroupStart();
      ncclSend(&out, 1, ncclInt64, kVictim, comm, nullptr);
      ncclRecv(&in, 1, ncclInt64, kVictim, comm, nullptr);
      Outcome first = outcomeOf(ncclGroupEnd());
      reporter.report("call_ms", std::to_string(millisecondsSince(start)));
      reportOutcome(reporter, "first", first);
      ncclCommAbort(comm);
      return 0;
    }));
  ASSERT_TRUE(ranks[kVictim]->waitFor("ready", seconds(20))) << reportedOutcome(*ranks[kVictim], "init");
  ranks[kVictim]->signal(SIGKILL);
  for (int rank = 0; rank < kRanks; ++rank) {
    if (rank == kVictim) continue;
    ChildProcess& survivor = *ranks[rank];
    ChildExit exit = survivor.waitExit(seconds(20));
    ASSERT_TRUE(exit.exited && exit.code == 0) << "rank " << rank << ": " << exit.describe();
    Outcome first = reportedOutcome(survivor, "first");
    EXPECT_EQ(first.result, ncclRemoteError) << "rank " << rank << ": " << first;
    EXPECT_THAT(first.text, HasSubstr("rank 2 (host")) << "rank " << rank << ": " << first;
    // Found at once (a gone process gets 250 ms to drain what it sent), not after HORA_TIMEOUT (30 s).
    EXPECT_LT(reportedNumber(survivor, "call_ms"), 1500) << "rank " << rank << ": " << first;
  }
}

// A rank that finalized its communicator (ncclCommFinalize, no destroy
// yet) while its peer still calls a collective on it: the peer learns so
// at once, from the connections the finalize closed, instead of waiting
// for HORA_TIMEOUT (NCCL waits for ever), and the text says what happened.
TEST_P(PeerFailure, APeerThatFinalizedIsReportedAtOnce) {
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < 2; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=, this](Reporter& reporter) {
      prepareRank(port, "30");
      ncclComm_t comm = joinCommunicator(reporter, 2, rank);
      if (comm == nullptr) return 1;
      std::vector<float> data(1024, 1.0f);
      Outcome shared = outcomeOf(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm, nullptr));
      reportOutcome(reporter, "shared", shared);
      if (rank == 1) {
        reportOutcome(reporter, "finalize", outcomeOf(ncclCommFinalize(comm)));
        std::this_thread::sleep_for(milliseconds(2500));  // alive, its communicator closed
      } else {
        std::this_thread::sleep_for(milliseconds(300));
        auto start = Clock::now();
        Outcome alone = outcomeOf(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm, nullptr));
        reporter.report("call_ms", std::to_string(millisecondsSince(start)));
        reportOutcome(reporter, "alone", alone);
      }
      ncclCommDestroy(comm);
      return 0;
    }));
  for (int rank = 0; rank < 2; ++rank) {
    ChildExit exit = ranks[rank]->waitExit(seconds(20));
    ASSERT_TRUE(exit.exited && exit.code == 0) << "rank " << rank << " " << exit.describe();
    EXPECT_EQ(reportedOutcome(*ranks[rank], "shared").result, ncclSuccess) << "rank " << rank;
  }
  EXPECT_EQ(reportedOutcome(*ranks[1], "finalize").result, ncclSuccess);
  Outcome alone = reportedOutcome(*ranks[0], "alone");
  EXPECT_EQ(alone.result, ncclRemoteError) << alone;
  EXPECT_THAT(alone.text, AllOf(HasSubstr("rank 1 (host"), HasSubstr("closed the communicator"))) << alone;
  EXPECT_LT(reportedNumber(*ranks[0], "call_ms"), 2000) << alone;
}

TEST_P(PeerFailure, StoppedPeerTimesOutNamingIt) {
  const int port = freeLoopbackPort();
  ChildProcess rank1([=, this](Reporter& reporter) {
    prepareRank(port, "2");
    return joinAndIdle(reporter, 2, 1);
  });
  ChildProcess rank0([=, this](Reporter& reporter) {
    prepareRank(port, "2");
    return allReduceUntilFailure(reporter, 2, 0, 1);
  });
  ASSERT_TRUE(rank1.waitFor("ready", seconds(10))) << reportedOutcome(rank1, "init");
  rank1.signal(SIGSTOP);  // alive, connections open, never answers
  ASSERT_TRUE(rank0.waitFor("first_result", seconds(15))) << "rank 0 hangs";
  ChildExit exit = rank0.waitExit(seconds(10));
  ASSERT_TRUE(exit.exited && exit.code == 0) << exit.describe();
  Outcome first = reportedOutcome(rank0, "first");
  EXPECT_EQ(first.result, ncclRemoteError) << first;
  EXPECT_THAT(first.text, HasSubstr("rank 1 (host")) << first;
  EXPECT_THAT(first.text, HasSubstr("HORA_TIMEOUT")) << first;
  EXPECT_EQ(reportedOutcome(rank0, "again").result, ncclRemoteError);
  EXPECT_LT(reportedNumber(rank0, "again_ms"), 500);
  EXPECT_EQ(reportedNumber(rank0, "async"), ncclRemoteError);
}

// Four ranks, rank 2 stopped mid all-reduce: every survivor times out at
// about the same moment, each waiting on its own neighbour, and yet each
// names rank 2, the one they all wait for in the end.
TEST_P(PeerFailure, StoppedRankAmongFourIsNamedByEverySurvivor) {
  constexpr int kRanks = 4;
  constexpr int kVictim = 2;
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < kRanks; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=, this](Reporter& reporter) {
      prepareRank(port, "2");
      return allReduceUntilFailure(reporter, kRanks, rank, 100000);
    }));
  ASSERT_TRUE(ranks[kVictim]->waitFor("running", seconds(20))) << reportedOutcome(*ranks[kVictim], "init");
  ranks[kVictim]->signal(SIGSTOP);
  for (int rank = 0; rank < kRanks; ++rank) {
    if (rank == kVictim) continue;
    ChildExit exit = ranks[rank]->waitExit(seconds(20));
    ASSERT_TRUE(exit.exited && exit.code == 0) << "rank " << rank << ": " << exit.describe();
    Outcome first = reportedOutcome(*ranks[rank], "first");
    EXPECT_EQ(first.result, ncclRemoteError) << first;
    EXPECT_THAT(first.text, ContainsRegex(failedFirst(kVictim))) << "rank " << rank << ": " << first;
  }
  ranks[kVictim]->signal(SIGKILL);
}

TEST_P(PeerFailure, AbortFromAnotherThreadEndsAWaitingCollective) {
  // HORA_TIMEOUT is long: only the abort can end the wait on the stopped peer.
  const int port = freeLoopbackPort();
  ChildProcess rank1([=, this](Reporter& reporter) {
    prepareRank(port, "60");
    return joinAndIdle(reporter, 2, 1);
  });
  ChildProcess rank0([=, this](Reporter& reporter) {
    prepareRank(port, "60");
    ncclComm_t comm = joinCommunicator(reporter, 2, 0);
    if (comm == nullptr) return 1;
    std::atomic<long long> abortedAt{0};
    auto start = Clock::now();
    std::thread aborter([&] {
      std::this_thread::sleep_for(milliseconds(500));
      abortedAt = millisecondsSince(start);
      reportOutcome(reporter, "abort", outcomeOf(ncclCommAbort(comm)));
    });
    std::vector<float> data(1 << 20, 1.0f);
    Outcome call = outcomeOf(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm, nullptr));
    reporter.report("returned_after_abort_ms", std::to_string(millisecondsSince(start) - abortedAt));
    reportOutcome(reporter, "call", call);
    aborter.join();
    return 0;
  });
  ASSERT_TRUE(rank1.waitFor("ready", seconds(10))) << reportedOutcome(rank1, "init");
  rank1.signal(SIGSTOP);
  ChildExit exit = rank0.waitExit(seconds(15));
  ASSERT_TRUE(exit.exited && exit.code == 0) << exit.describe();
  EXPECT_EQ(reportedOutcome(rank0, "abort").result, ncclSuccess) << reportedOutcome(rank0, "abort");
  Outcome call = reportedOutcome(rank0, "call");
  EXPECT_NE(call.result, ncclSuccess) << call;
  // This rank's own abort, not a peer's failure, though over TCP the call
  // may see its closed socket before the abort flag.
  EXPECT_EQ(call.result, ncclInvalidUsage) << call;
  EXPECT_THAT(call.text, HasSubstr("aborted")) << call;
  EXPECT_THAT(call.text, Not(HasSubstr("peer"))) << call;
  EXPECT_LT(reportedNumber(rank0, "returned_after_abort_ms"), 2000);
}

}  // namespace
}  // namespace hora_api_test
