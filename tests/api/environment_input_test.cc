// Bad settings in the environment: each makes the call that reads it fail
// with ncclInvalidArgument and a text naming the variable and the value.
// Every case runs in a child process with its own environment.
#include <stdlib.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rank_process.h"

namespace hora_api_test {
namespace {

using std::chrono::seconds;

// Runs `call` in a child whose environment `prepare` set up; returns its outcome.
Outcome outcomeInChild(const std::function<void()>& prepare, const std::function<ncclResult_t()>& call) {
  ChildProcess child([&](Reporter& reporter) {
    prepare();
    reportOutcome(reporter, "call", outcomeOf(call()));
    return 0;
  });
  ChildExit exit = child.waitExit(seconds(15));
  EXPECT_TRUE(exit.exited && exit.code == 0) << exit.describe();
  return reportedOutcome(child, "call");
}

ncclResult_t createUniqueId() {
  ncclUniqueId id;
  return ncclGetUniqueId(&id);
}

// Two communicators of this process's threads (ncclCommInitAll).
ncclResult_t createCommunicatorsOfThreads() {
  ncclComm_t comms[2] = {nullptr, nullptr};
  const ncclResult_t result = ncclCommInitAll(comms, 2, nullptr);
  if (result == ncclSuccess)
    for (ncclComm_t comm : comms) ncclCommDestroy(comm);
  return result;
}

// A one-rank communicator through the full init path.
ncclResult_t createOneRankCommunicator() {
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclGetUniqueId(&id);
  if (result != ncclSuccess) return result;
  result = ncclCommInitRank(&comm, 1, id, 0);
  if (result == ncclSuccess) ncclCommDestroy(comm);
  return result;
}

TEST(EnvironmentInput, UnknownInterfaceNameListsTheInterfaces) {
  auto unknownInterface = [] {
    unsetenv("HORA_COMM_ID");
    setEnvironment("HORA_SOCKET_IFNAME", "nosuchif0");
    setEnvironment("HORA_TIMEOUT", "3");
  };
  const Words explains = {"nosuchif0", "HORA_SOCKET_IFNAME"};
  const char* listsLoopback = "has: (.*, )?lo(,|$)";
  // Where ncclGetUniqueId picks the interface of the rendezvous root...
  Outcome uniqueId = outcomeInChild(unknownInterface, createUniqueId);
  EXPECT_THAT(uniqueId, FailsWith(ncclInvalidArgument, explains));
  EXPECT_THAT(uniqueId.text, ::testing::ContainsRegex(listsLoopback));
  // ...and where init picks the interface the rank listens on.
  const int port = freeLoopbackPort();
  auto unknownInterfaceWithRoot = [&] {
    unknownInterface();
    setEnvironment("HORA_COMM_ID", "127.0.0.1:" + std::to_string(port));
  };
  Outcome init = outcomeInChild(unknownInterfaceWithRoot, createOneRankCommunicator);
  EXPECT_THAT(init, FailsWith(ncclInvalidArgument, explains));
  EXPECT_THAT(init.text, ::testing::ContainsRegex(listsLoopback));
}

TEST(EnvironmentInput, InvalidTimeoutIsNamed) {
  auto badTimeout = [] {
    setEnvironment("HORA_SOCKET_IFNAME", "lo");
    setEnvironment("HORA_TIMEOUT", "soon");
  };
  EXPECT_THAT(outcomeInChild(badTimeout, createOneRankCommunicator),
              FailsWith(ncclInvalidArgument, Words{"HORA_TIMEOUT", "soon"}));
}

TEST(EnvironmentInput, InvalidRendezvousAddressIsNamed) {
  auto badAddress = [] {
    setEnvironment("HORA_SOCKET_IFNAME", "lo");
    setEnvironment("HORA_COMM_ID", "localhost-without-port");
  };
  EXPECT_THAT(outcomeInChild(badAddress, createUniqueId),
              FailsWith(ncclInvalidArgument, Words{"ncclGetUniqueId", "localhost-without-port", "port"}));
  // ncclCommInitAll does not use it (its ranks meet on loopback), but, as
  // NCCL's (which gets its id from ncclGetUniqueId), refuses it too.
  EXPECT_THAT(outcomeInChild(badAddress, createCommunicatorsOfThreads),
              FailsWith(ncclInvalidArgument, Words{"ncclCommInitAll", "localhost-without-port", "port"}));
  // Port 0 would let the root listen where no rank can find it.
  auto portZero = [] {
    setEnvironment("HORA_SOCKET_IFNAME", "lo");
    unsetenv("HORA_COMM_ID");
    setEnvironment("NCCL_COMM_ID", "127.0.0.1:0");
  };
  EXPECT_THAT(outcomeInChild(portZero, createUniqueId),
              FailsWith(ncclInvalidArgument, Words{"ncclGetUniqueId", "NCCL_COMM_ID='127.0.0.1:0'", "port 0"}));
}

// A setting that decides how ranks cut an operation's bytes, set on one
// rank only: every rank's init fails with the variable and both values,
// instead of the collectives pairing different bytes. Two cases: a ring
// step (wrong data before) and the algorithm threshold (a hang before);
// agreement_process_test.cc has the stamps'.
TEST(EnvironmentInput, SettingsThatDifferBetweenRanksFailInitOnEveryRank) {
  for (const auto& [variable, value] : std::vector<std::pair<std::string, std::string>>{
           {"HORA_CHUNK_SIZE", "65536"}, {"HORA_DIRECT_MAX_BYTES", "0"}}) {
    const int port = freeLoopbackPort();
    std::vector<std::unique_ptr<ChildProcess>> ranks;
    for (int rank = 0; rank < 2; ++rank)
      ranks.push_back(std::make_unique<ChildProcess>([&, rank](Reporter& reporter) {
        useRendezvous(port, "10");
        if (rank == 1) setEnvironment(variable, value);
        ncclComm_t comm = joinCommunicator(reporter, 2, rank);
        if (comm != nullptr) ncclCommDestroy(comm);
        return 0;
      }));
    for (auto& child : ranks) {
      ChildExit exit = child->waitExit(seconds(20));
      EXPECT_TRUE(exit.exited && exit.code == 0) << exit.describe();
      EXPECT_THAT(reportedOutcome(*child, "init"),
                  FailsWith(ncclInvalidUsage, Words{variable, "on rank 0 but " + value + " on rank 1",
                                                    "same on every rank"}));
    }
  }
}

TEST(EnvironmentInput, WorkingEnvironmentCreatesACommunicator) {
  // The control case: the same path succeeds with good settings.
  const int port = freeLoopbackPort();
  auto good = [&] { useRendezvous(port, "5"); };
  EXPECT_EQ(outcomeInChild(good, createOneRankCommunicator).result, ncclSuccess);
}

}  // namespace
}  // namespace hora_api_test
