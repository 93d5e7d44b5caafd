// The agreement check (src/core/agreement.h) with ranks as forked
// processes, over shared memory and TCP: ranks that disagree on a call all
// fail with ncclInvalidUsage naming the field and both values, promptly
// (HORA_TIMEOUT is 10 s; the failures must come in well under 3), and the
// call that follows fails with the same cause. tests/api/agreement_test.cc
// has the fuller set of cases with ranks as threads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rank_process.h"

namespace hora_api_test {
namespace {

using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// One disagreement: what rank r calls, and what every rank's error says.
struct Disagreement {
  const char* name;
  int nranks;
  std::function<ncclResult_t(int rank, ncclComm_t comm)> call;
  Words words;
};

ncclResult_t allReduce(ncclComm_t comm, std::size_t count, ncclDataType_t type = ncclFloat,
                       ncclRedOp_t op = ncclSum) {
  std::vector<double> data(count, 1.0);  // room for any type up to 8 bytes
  return ncclAllReduce(data.data(), data.data(), count, type, op, comm, nullptr);
}

const std::vector<Disagreement>& disagreements() {
  static const std::vector<Disagreement> all = {
      {"Count", 2, [](int rank, ncclComm_t comm) { return allReduce(comm, rank == 0 ? 1000 : 2000); },
       {"count", "1000", "2000", "call #1"}},
      {"CountOfOneRankInThree", 3,
       [](int rank, ncclComm_t comm) { return allReduce(comm, rank == 1 ? 70000 : 90000); },
       {"count", "70000", "90000"}},
      {"Datatype", 2,
       [](int rank, ncclComm_t comm) { return allReduce(comm, 300, rank == 0 ? ncclFloat : ncclInt32); },
       {"datatype", "float", "int32"}},
      {"Op", 2, [](int rank, ncclComm_t comm) { return allReduce(comm, 300, ncclFloat, rank == 0 ? ncclSum : ncclMin); },
       {"op", "sum", "min"}},
      {"Root", 2,
       [](int rank, ncclComm_t comm) {
         std::vector<float> data(300, 1.0f);
         return ncclBroadcast(data.data(), data.data(), data.size(), ncclFloat, rank, comm, nullptr);
       },
       {"root 0", "root 1"}},
      {"RootWhereEachRankWaitsForAnother", 4,
       [](int rank, ncclComm_t comm) {
         // Ranks 0 and 1 scatter from rank 2, ranks 2 and 3 from rank 0:
         // every rank waits for a root that does not send.
         std::vector<float> in(4 * 300, 1.0f), out(300);
         return ncclScatter(in.data(), out.data(), out.size(), ncclFloat, rank < 2 ? 2 : 0, comm, nullptr);
       },
       {"root 0", "root 2"}},
      {"Kind", 2,
       [](int rank, ncclComm_t comm) {
         std::vector<float> in(64, 1.0f), out(128);
         if (rank == 0) return ncclReduceScatter(out.data(), in.data(), 64, ncclFloat, ncclSum, comm, nullptr);
         return ncclAllReduce(in.data(), out.data(), 64, ncclFloat, ncclSum, comm, nullptr);
       },
       {"ReduceScatter", "AllReduce"}},
      {"SkippedCall", 2,
       [](int rank, ncclComm_t comm) {
         // Rank 1 skips call #1, an all-reduce; its call #1 is a broadcast.
         std::vector<float> data(64, 1.0f);
         if (rank == 0) {
           ncclResult_t first = allReduce(comm, 64);
           if (first != ncclSuccess) return first;
         }
         return ncclBroadcast(data.data(), data.data(), data.size(), ncclFloat, 0, comm, nullptr);
       },
       {"call #1", "AllReduce", "Broadcast", "skip"}},
      {"PointToPointSize", 2,
       [](int rank, ncclComm_t comm) {
         std::vector<float> out(100, 1.0f), in(100);
         const int count = rank == 1 ? 25 : 100;
         ncclGroupStart();
         ncclSend(out.data(), count, ncclFloat, 1 - rank, comm, nullptr);
         ncclRecv(in.data(), count, ncclFloat, 1 - rank, comm, nullptr);
         return ncclGroupEnd();
       },
       {"point-to-point", "100 bytes", "400 bytes"}},
  };
  return all;
}

class AgreementProcesses
    : public ::testing::TestWithParam<std::tuple<const char*, std::size_t>> {
 protected:
  const char* transport() const { return std::get<0>(GetParam()); }
  const Disagreement& disagreement() const { return disagreements()[std::get<1>(GetParam())]; }
};

TEST_P(AgreementProcesses, EveryRankFailsWithTheCause) {
  const Disagreement& d = disagreement();
  const int port = freeLoopbackPort();
  const std::string transport = this->transport();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < d.nranks; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=, &d](Reporter& reporter) {
      useRendezvous(port, "10");
      setEnvironment("HORA_TRANSPORT", transport);
      ncclComm_t comm = joinCommunicator(reporter, d.nranks, rank);
      if (comm == nullptr) return 1;
      const auto start = Clock::now();
      reportOutcome(reporter, "call", outcomeOf(d.call(rank, comm)));
      reporter.report("call_ms", std::to_string(millisecondsSince(start)));
      reportOutcome(reporter, "next", outcomeOf(allReduce(comm, 4)));
      ncclCommDestroy(comm);
      return 0;
    }));
  for (int rank = 0; rank < d.nranks; ++rank) {
    ChildProcess& child = *ranks[rank];
    ChildExit exit = child.waitExit(seconds(30));
    ASSERT_TRUE(exit.exited && exit.code == 0) << "rank " << rank << ": " << exit.describe() << "; "
                                               << reportedOutcome(child, "init");
    EXPECT_THAT(reportedOutcome(child, "call"), FailsWith(ncclInvalidUsage, d.words)) << "rank " << rank;
    EXPECT_LT(std::stoll(child.value("call_ms")), 3000) << "rank " << rank << ": not from the check";
    EXPECT_THAT(reportedOutcome(child, "next"), FailsWith(ncclInvalidUsage, d.words)) << "rank " << rank;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AgreementProcesses,
    ::testing::Combine(::testing::Values("shm", "tcp"), ::testing::Range<std::size_t>(0, disagreements().size())),
    [](const auto& info) {
      return std::string(disagreements()[std::get<1>(info.param)].name) + "_" + std::get<0>(info.param);
    });

TEST(AgreementSettingProcesses, RanksThatDisagreeOnTheCheckSayWhichSetting) {
  // Ranks compare the setting at init (core/agreed_settings.h): over TCP a
  // rank that does not stamp would take another's stamp for data.
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < 2; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=](Reporter& reporter) {
      useRendezvous(port, "10");
      setEnvironment("HORA_TRANSPORT", "shm");
      setEnvironment("HORA_CHECK_AGREEMENT", rank == 0 ? "0" : "1");
      ncclComm_t comm = joinCommunicator(reporter, 2, rank);
      if (comm == nullptr) return 1;
      reportOutcome(reporter, "call", outcomeOf(allReduce(comm, 100)));
      ncclCommDestroy(comm);
      return 0;
    }));
  for (int rank = 0; rank < 2; ++rank) {
    ChildExit exit = ranks[rank]->waitExit(seconds(30));
    EXPECT_TRUE(exit.exited && exit.code == 1) << "rank " << rank << ": " << exit.describe();
    EXPECT_THAT(reportedOutcome(*ranks[rank], "init"),
                FailsWith(ncclInvalidUsage, Words{"HORA_CHECK_AGREEMENT", "same on every rank"}))
        << "rank " << rank;
  }
}

}  // namespace
}  // namespace hora_api_test
