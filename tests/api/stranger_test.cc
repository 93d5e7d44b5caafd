// Strangers on hora's listening ports must not fail a job. While three
// ranks (forked processes, rendezvous through HORA_COMM_ID) join, a
// stranger misbehaves on one listener: the rendezvous root, rank 0's
// bootstrap ring listener, or every rank's transport listener (reached by
// the first all-to-all, whose connections are made then). Init must
// succeed on every rank, the collectives must give the right results, and
// the listener's rank must have logged that it ignored the stranger.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "nccl.h"
#include "rank_process.h"
#include "support/stranger.h"
#include "support/listening_ports.h"

namespace hora_api_test {

using hora::test_support::Listener;
using hora::test_support::listenerName;
using hora::test_support::Stranger;
using hora::test_support::StrangerKind;
using hora::test_support::kindName;
namespace {

using hora::test_support::listeningPorts;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kRanks = 3;
constexpr std::size_t kCount = 256;  // elements per all-to-all block

struct Files {
  std::string dir;
  std::string go() const { return dir + "/go"; }  // exists: ranks may run collectives
  std::string log(int rank) const { return dir + "/rank" + std::to_string(rank) + ".log"; }
};

bool waitForFile(const std::string& path, milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  struct stat info;
  while (::stat(path.c_str(), &info) != 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// One rank: reports the id's secret (rank 0), joins, waits for the test's
// go, then an all-to-all (new connections to every transport listener) and
// an all-reduce, and reports whether their results were right.
int rank(Reporter& reporter, int rank, int port, const Files& files) {
  useRendezvous(port, "10");
  setEnvironment("HORA_DEBUG", "INFO");
  setEnvironment("HORA_DEBUG_FILE", files.log(rank));
  if (rank == 0) {
    // With HORA_COMM_ID the id is made from the address alone, so its
    // secret (bytes 8..15 of the id) is one anybody can compute: the
    // stranger that sends a huge length field uses it.
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) return 2;
    std::uint64_t magic = 0;
    std::memcpy(&magic, id.internal + 8, sizeof(magic));
    reporter.report("magic", std::to_string(magic));
  }
  ncclComm_t comm = joinCommunicator(reporter, kRanks, rank);
  if (comm == nullptr) return 1;
  if (!waitForFile(files.go(), seconds(15))) return 3;

  std::vector<int> send(kCount * kRanks), received(kCount * kRanks, -1);
  for (int peer = 0; peer < kRanks; ++peer)
    for (std::size_t i = 0; i < kCount; ++i) send[peer * kCount + i] = rank * 1000 + peer;
  Outcome allToAll = outcomeOf(ncclAlltoAll(send.data(), received.data(), kCount, ncclInt32, comm, nullptr));
  reportOutcome(reporter, "alltoall", allToAll);
  bool right = true;
  for (int peer = 0; peer < kRanks; ++peer)
    for (std::size_t i = 0; i < kCount; ++i) right &= received[peer * kCount + i] == peer * 1000 + rank;
  reporter.report("alltoall_right", right ? "yes" : "no");

  int value = rank + 1;
  Outcome allReduce = outcomeOf(ncclAllReduce(&value, &value, 1, ncclInt32, ncclSum, comm, nullptr));
  reportOutcome(reporter, "allreduce", allReduce);
  reporter.report("allreduce_value", std::to_string(value));
  reportOutcome(reporter, "destroy", outcomeOf(ncclCommDestroy(comm)));
  return 0;
}

// The ports `pid` listens on apart from `except`, once there are `count`.
std::set<int> waitForListeners(pid_t pid, int except, std::size_t count) {
  auto until = std::chrono::steady_clock::now() + seconds(10);
  for (;;) {
    std::set<int> ports = listeningPorts(pid);
    ports.erase(except);
    if (ports.size() >= count || std::chrono::steady_clock::now() >= until) return ports;
    std::this_thread::sleep_for(milliseconds(2));
  }
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Case {
  StrangerKind kind;
  Listener listener;
};

class Strangers : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hora-strangers-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    files_.dir = pattern;
  }
  void TearDown() override {
    for (int r = 0; r < kRanks; ++r) ::unlink(files_.log(r).c_str());
    ::unlink(files_.go().c_str());
    ::rmdir(files_.dir.c_str());
  }
  Files files_;
};

TEST_P(Strangers, AreIgnoredAndTheJobSucceeds) {
  const Case c = GetParam();
  const int port = freeLoopbackPort();
  const Files files = files_;
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  auto start = [&](int r) {
    ranks.push_back(std::make_unique<ChildProcess>(
        [r, port, files](Reporter& reporter) { return rank(reporter, r, port, files); }, seconds(40)));
  };
  std::vector<Stranger> strangers;

  // Rank 0 alone first: it hosts the root and waits there, its ring
  // listener open. The strangers come before any other rank exists, so on
  // both listeners they are the first connections to be accepted.
  start(0);
  auto magicText = ranks[0]->waitFor("magic", seconds(10));
  ASSERT_TRUE(magicText.has_value()) << "rank 0 did not report the id";
  const std::uint64_t magic = std::stoull(*magicText);
  std::set<int> ringPorts = waitForListeners(ranks[0]->pid(), port, 1);
  ASSERT_EQ(ringPorts.size(), 1u) << "rank 0 should listen on the root port and its ring port";
  ASSERT_TRUE(listeningPorts(ranks[0]->pid()).count(port)) << "rank 0 does not host the root";
  if (c.listener == Listener::Root) strangers.emplace_back(c.kind, port, Listener::Root, magic);
  if (c.listener == Listener::Ring)
    strangers.emplace_back(c.kind, *ringPorts.begin(), Listener::Ring, magic);

  for (int r = 1; r < kRanks; ++r) start(r);
  for (int r = 0; r < kRanks; ++r) {
    auto ready = ranks[r]->waitFor("ready", seconds(20));
    ASSERT_TRUE(ready.has_value()) << "rank " << r << " did not finish init: "
                                   << reportedOutcome(*ranks[r], "init");
  }
  // After init every rank listens on its transport listener and on its
  // bootstrap listener (which takes notices, probes and shrink requests).
  // Its first all-to-all makes new connections on the first, behind the
  // strangers.
  if (c.listener == Listener::Transport)
    for (int r = 0; r < kRanks; ++r) {
      std::set<int> ports = waitForListeners(ranks[r]->pid(), port, 2);
      ASSERT_EQ(ports.size(), 2u) << "rank " << r << "'s transport and bootstrap listeners";
      for (int p : ports) strangers.emplace_back(c.kind, p, Listener::Transport, magic);
    }
  std::ofstream(files.go()).put('\n');

  for (int r = 0; r < kRanks; ++r) {
    ChildExit exit = ranks[r]->waitExit(seconds(20));
    EXPECT_TRUE(exit.exited && exit.code == 0) << "rank " << r << " " << exit.describe();
    EXPECT_EQ(reportedOutcome(*ranks[r], "alltoall").result, ncclSuccess)
        << "rank " << r << ": " << reportedOutcome(*ranks[r], "alltoall");
    EXPECT_EQ(ranks[r]->value("alltoall_right"), "yes") << "rank " << r;
    EXPECT_EQ(ranks[r]->value("allreduce_value"), std::to_string(kRanks * (kRanks + 1) / 2))
        << "rank " << r << ": " << reportedOutcome(*ranks[r], "allreduce");
  }
  // The listener's rank saw the stranger and said so (at INFO), naming
  // where it came from.
  for (int r = 0; r < kRanks; ++r) {
    if (c.listener != Listener::Transport && r != 0) continue;
    EXPECT_THAT(readFile(files.log(r)), ::testing::HasSubstr("ignored a connection from 127.0.0.1:"))
        << "rank " << r;
  }
}

// Something other than hora's root answers at the rendezvous address (a
// port another service took over): a rank that joins there gets an error
// saying so, never a crash or a read past what was sent, whether the answer
// is a refusal without its terminator or a table of ranks that is garbage.
TEST(ForeignRoot, AnAnswerThatIsNotHorasFailsInitCleanly) {
  for (bool refusal : {true, false}) {
    const int port = freeLoopbackPort();
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(listener, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int yes = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    ASSERT_EQ(::listen(listener, 4), 0);
    std::thread foreign([&] {
      const int peer = ::accept(listener, nullptr, nullptr);
      if (peer < 0) return;
      char greeting[4096];
      std::this_thread::sleep_for(milliseconds(200));
      (void)!::recv(peer, greeting, sizeof(greeting), MSG_DONTWAIT);
      // A reply-sized answer: "ok" with a table of 0xff bytes, or a
      // refusal whose text fills its buffer with no terminator.
      std::vector<char> answer(64 * 1024, static_cast<char>(0xff));
      const std::int32_t head[3] = {refusal ? 0 : 1, 4, -1};
      std::memcpy(answer.data(), head, sizeof(head));
      (void)!::send(peer, answer.data(), answer.size(), MSG_NOSIGNAL);
      std::this_thread::sleep_for(milliseconds(500));
      ::close(peer);
    });
    // The rank in a child process, as the other tests' ranks: the library's
    // state (its log, for one) must not start in this process.
    const std::string commId = "127.0.0.1:" + std::to_string(port);
    ChildProcess joiner(
        [commId](Reporter& reporter) {
          hora::test_support::setEnvironment("NCCL_COMM_ID", commId);
          hora::test_support::setEnvironment("HORA_TIMEOUT", "10");
          ncclUniqueId id;
          if (ncclGetUniqueId(&id) != ncclSuccess) return 2;
          ncclComm_t comm = nullptr;
          const ncclResult_t result = ncclCommInitRank(&comm, 2, id, 1);  // rank 1: the root is elsewhere
          reporter.report("result", std::to_string(static_cast<int>(result)));
          reporter.report("text", ncclGetLastError(nullptr));
          return 0;
        },
        seconds(30));
    const ChildExit exit = joiner.waitExit(seconds(30));
    foreign.join();
    ::close(listener);
    ASSERT_TRUE(exit.exited && exit.code == 0) << (refusal ? "refusal: " : "table: ") << exit.describe();
    const std::string text = joiner.value("text");
    EXPECT_NE(joiner.value("result"), std::to_string(static_cast<int>(ncclSuccess))) << text;
    if (!refusal) {
      EXPECT_THAT(text, ::testing::HasSubstr("not hora's")) << text;
    }
    EXPECT_LT(text.size(), 2000u) << "the error text ran past the refusal's buffer";
  }
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  for (Listener listener : {Listener::Root, Listener::Ring, Listener::Transport})
    for (StrangerKind kind : {StrangerKind::ConnectAndClose, StrangerKind::RandomBytes,
                              StrangerKind::Silent, StrangerKind::HugeLength,
                              StrangerKind::WrongMagic, StrangerKind::Reset})
      cases.push_back({kind, listener});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(OnEveryListener, Strangers, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return listenerName(info.param.listener) + "_" + kindName(info.param.kind);
                         });

}  // namespace
}  // namespace hora_api_test
