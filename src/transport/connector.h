// Makes the connections of one communicator: for each (peer, direction) on
// first use, with the transport chosen for that peer (transport/registry.h).
// Every connection starts as a TCP connection to the peer's listener (the
// sending side connects, proves it holds the unique id and introduces
// itself; the receiving side admits it through a gatekeeper that ignores
// strangers, keeping early arrivals from other peers for later); the transport then
// sets itself up over it: a TCP pair keeps using it, a shared-memory pair
// sets its FIFO up over it and keeps it as a lifeline.
//
// The same listener takes notices: a rank that stops the communicator
// because the program misused it (ranks that disagree on a call, core/
// agreement.h) tells every other rank why before it closes its
// connections, so that they report that cause instead of a closed peer.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/gatekeeper.h"
#include "transport/connection.h"
#include "transport/registry.h"

namespace hora::transport {

// The error of a rank that learnt from another rank's notice why the
// communicator stopped (it is not told on again).
class PeerNotice : public Error {
 public:
  using Error::Error;
};

class Connector {
 public:
  // Collective over the communicator: exchanges listener addresses.
  // kinds[p] is the transport to use with peer p (both sides must agree);
  // each must be registered (carrierOf).
  Connector(bootstrap::Bootstrap& bootstrap, std::uint64_t magic, const std::atomic<bool>* abort,
            std::vector<TransportKind> kinds, const ConnectorOptions& options);

  // `busy`: the connection will carry most of the traffic (ConnectionSetup).
  SendConnection& sendTo(int peer, bool busy = false);
  RecvConnection& recvFrom(int peer);
  TransportKind kindOf(int peer) const { return kinds_[peer]; }

  // Shuts every socket down: peers blocked on this rank see EOF at once.
  void shutdown();

  // Tells every other rank, best effort and within about a second in all,
  // the error that makes this rank stop the communicator.
  void announce(const Error& error);
  // A notice another rank announced, if one is here or comes within
  // `grace`: the PeerNotice this rank fails with. Connections that arrive
  // meanwhile are kept for recvFrom.
  std::optional<PeerNotice> noticeWithin(std::chrono::milliseconds grace);

 private:
  // After the greeting (bootstrap/greeting.h), which carries the secret.
  // A notice has kind kNotice and its NoticeHeader and text follow.
  struct Introduction {
    std::int32_t rank;
    std::int32_t kind;
  };
  static constexpr std::int32_t kNotice = -1;
  struct NoticeHeader {
    std::int32_t errorKind;
    std::uint32_t textBytes;
  };
  static constexpr std::uint32_t kMaxNoticeBytes = 8192;
  Socket acceptFrom(int peer, const Deadline& deadline);
  // The notice a guest introduced as one carries.
  PeerNotice readNotice(Socket& socket, int from);

  bootstrap::Bootstrap& bootstrap_;
  std::uint64_t magic_;
  const std::atomic<bool>* abort_;
  std::vector<TransportKind> kinds_;
  ConnectorOptions options_;
  bootstrap::Gatekeeper gate_;  // our listener
  std::vector<SocketAddress> peerAddresses_;
  // Peers whose process this rank can see (same host, same process
  // namespace): one that dies before connecting is noticed at once.
  std::vector<bool> watchable_;
  std::map<int, std::unique_ptr<SendConnection>> sends_;
  std::map<int, std::unique_ptr<RecvConnection>> recvs_;
  std::map<int, Socket> earlyArrivals_;  // accepted, not yet asked for
  std::mutex socketsMutex_;              // shutdown() may come from another thread
  std::vector<int> socketFds_;           // for shutdown()
};

}  // namespace hora::transport
