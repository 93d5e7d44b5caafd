// The env:// init method of hora's C++ API, with ranks as processes: each
// child gets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT as a launcher
// (torchrun, hora-run) would set them, and a missing or malformed variable
// gives an error that names it.
#include <stdlib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "child_process.h"
#include "hora/communicator.h"

namespace hora_api_test {
namespace {

using ::testing::HasSubstr;
using std::chrono::seconds;

void setLaunchEnvironment(int rank, int worldSize, int port) {
  setEnvironment("RANK", std::to_string(rank));
  setEnvironment("WORLD_SIZE", std::to_string(worldSize));
  setEnvironment("MASTER_ADDR", "127.0.0.1");
  setEnvironment("MASTER_PORT", std::to_string(port));
  setEnvironment("HORA_SOCKET_IFNAME", "lo");
  setEnvironment("HORA_TIMEOUT", "10");
}

// Reports "kind" and "what" of the hora::Error that fromInitMethod("env://") threw.
int reportInitError(Reporter& reporter) {
  try {
    hora::Communicator::fromInitMethod("env://");
    reporter.report("kind", "none");
  } catch (const hora::Error& error) {
    reporter.report("kind", std::to_string(static_cast<int>(error.kind())));
    reporter.report("what", error.what());
  }
  return 0;
}

TEST(CppEnvInit, RanksFromTheEnvironmentFormOneWorld) {
  constexpr int kRanks = 3;
  const int port = freeLoopbackPort();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < kRanks; ++rank)
    ranks.push_back(std::make_unique<ChildProcess>([=](Reporter& reporter) {
      setLaunchEnvironment(rank, kRanks, port);
      auto comm = hora::Communicator::fromInitMethod("env://");
      reporter.report("rank", std::to_string(comm->rank()));
      reporter.report("size", std::to_string(comm->size()));
      long long value = 1LL << (10 * rank);
      comm->allReduce(&value, &value, 1, hora::DataType::Int64, hora::RedOp::Sum);
      reporter.report("sum", std::to_string(value));
      return 0;
    }));
  for (int rank = 0; rank < kRanks; ++rank) {
    ChildExit exit = ranks[rank]->waitExit(seconds(20));
    ASSERT_TRUE(exit.exited && exit.code == 0)
        << "rank " << rank << " " << exit.describe() << ": " << ranks[rank]->value("exception");
    EXPECT_EQ(ranks[rank]->value("rank"), std::to_string(rank));
    EXPECT_EQ(ranks[rank]->value("size"), std::to_string(kRanks));
    EXPECT_EQ(ranks[rank]->value("sum"), std::to_string(1LL + (1LL << 10) + (1LL << 20)));
  }
}

struct MissingVariable {
  const char* name;
  const char* value;  // nullptr: unset
  std::vector<std::string> words;
};

TEST(CppEnvInit, MissingOrMalformedVariablesAreNamed) {
  const std::vector<MissingVariable> cases = {
      {"RANK", nullptr, {"RANK", "not set"}},
      {"WORLD_SIZE", nullptr, {"WORLD_SIZE", "not set"}},
      {"MASTER_ADDR", nullptr, {"MASTER_ADDR", "MASTER_PORT"}},
      {"MASTER_PORT", nullptr, {"MASTER_ADDR", "MASTER_PORT"}},
      {"RANK", "first", {"RANK", "first", "not an integer"}},
      {"WORLD_SIZE", "0", {"world size", "0"}},
      {"RANK", "5", {"rank 5"}},
      {"MASTER_PORT", "port", {"MASTER_PORT", "port", "not an integer"}},
      {"MASTER_ADDR", "no-such-host.invalid", {"no-such-host.invalid"}},
  };
  for (const auto& entry : cases) {
    ChildProcess child([&](Reporter& reporter) {
      setLaunchEnvironment(0, 2, 1);
      if (entry.value == nullptr) unsetenv(entry.name);
      else setEnvironment(entry.name, entry.value);
      return reportInitError(reporter);
    });
    ChildExit exit = child.waitExit(seconds(10));
    ASSERT_TRUE(exit.exited && exit.code == 0) << exit.describe();
    const std::string context = std::string(entry.name) + "=" + (entry.value ? entry.value : "(unset)");
    EXPECT_EQ(child.value("kind"), std::to_string(static_cast<int>(hora::ErrorKind::InvalidArgument)))
        << context << ": " << child.value("what");
    for (const auto& word : entry.words) EXPECT_THAT(child.value("what"), HasSubstr(word)) << context;
  }
}

}  // namespace
}  // namespace hora_api_test
