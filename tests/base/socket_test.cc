// Sockets: what the operating system's defaults would get wrong.
#include "base/socket.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <vector>

#include "base/error.h"

namespace hora {
namespace {

using namespace std::chrono_literals;

// Many peers connecting to one listener before it accepts any (ranks that
// all reach the rendezvous root at once, or all open a connection to one
// rank in their first all-to-all) must all get through at once: a backlog
// that is full drops their attempts, which retry only seconds later.
TEST(Socket, AListenerTakesHundredsOfConnectionsBeforeItAcceptsOne) {
  int allowed = 0;
  std::ifstream("/proc/sys/net/core/somaxconn") >> allowed;
  constexpr int kPeers = 300;
  if (allowed < kPeers) GTEST_SKIP() << "net.core.somaxconn is " << allowed << ", below " << kPeers;
  Socket listener = Socket::listen(SocketAddress::parse("127.0.0.1:0"));
  std::vector<Socket> peers;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kPeers; ++i)
    peers.push_back(Socket::connect(listener.localAddress(), Deadline::after(2s), nullptr, "the test listener"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

}  // namespace
}  // namespace hora
