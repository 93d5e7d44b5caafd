// The rendezvous point of a communicator's init. Every rank connects to the
// root and sends a greeting (greeting.h) and a Hello (its rank, the rank
// count, where its bootstrap listener is); connections without the unique
// id's secret are ignored (gatekeeper.h). Once all nranks arrived the root
// answers each with the table of all ranks, or, if something is
// inconsistent or a rank never came, with an error text that every waiting
// rank reports.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>

#include "base/socket.h"

namespace hora::bootstrap {

// Wire format of rank information (fixed size, no pointers).
struct PeerInfo {
  std::int32_t rank = -1;
  std::int32_t pid = 0;
  std::uint64_t hostHash = 0;  // same value on ranks of one host
  char host[64] = {0};         // hostname, for messages
  sockaddr_storage listen{};   // the rank's bootstrap listener
  std::uint32_t listenLength = 0;

  SocketAddress listenAddress() const;
};

// After the greeting (which carries the secret and the wire version).
struct Hello {
  std::int32_t nranks = 0;
  // How long, from when it sent this, the rank waits for the root's answer.
  // The root answers by the earliest such time of the ranks that came, so a
  // rank given a shorter timeout than the root's (a program's own, such as
  // init_process_group's) hears which rank never came before it gives up.
  std::int32_t answerWithinMs = 0;
  PeerInfo self;
};

struct RootReply {
  std::int32_t ok = 0;     // 1: the table of nranks PeerInfo follows
  std::int32_t kind = 0;   // when ok == 0: the hora::ErrorKind to report
  std::int32_t failedRank = -1;  // when ok == 0: the rank that failed, if one did
  char error[512] = {0};  // when ok == 0
};

// Ranks wait this much longer for the root's answer than the root waits for
// them, so that when a rank never arrives the others hear which one it was
// rather than timing out themselves. Short: when the root itself is stopped,
// the ranks wait this much past their deadline.
inline constexpr std::chrono::milliseconds kRootReplyGrace{1000};

// Serves one rendezvous on `listener` in a background thread, then ends. The
// thread owns the socket; it gives up after `timeout` (telling the ranks that
// did arrive which ones are missing). The future is ready once every rank
// that arrived has been answered: a process hosting the root waits for it
// before it may exit, or the others would miss their answer.
std::shared_future<void> startRootServer(Socket listener, std::uint64_t magic,
                                         std::chrono::milliseconds timeout);

}  // namespace hora::bootstrap
