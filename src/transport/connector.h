// Makes the connections of one communicator: for each (peer, direction) on
// first use, with the transport chosen for that peer (transport/registry.h).
// Every connection starts as a TCP connection to the peer's listener (the
// sending side connects, proves it holds the unique id and introduces
// itself; the receiving side admits it through a gatekeeper that ignores
// strangers, keeping early arrivals from other peers for later); the transport then
// sets itself up over it: a TCP pair keeps using it, a shared-memory pair
// sets its FIFO up over it and keeps it as a lifeline.
//
// Notices of why the communicator stopped, probes of whether a peer still
// lives, and shrink requests go through the bootstrap listener instead
// (bootstrap/control.h).
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

// What a rank does while recvFrom() waits for a peer to connect: the
// executor progresses the connections its operation already uses. Ranks
// that disagree on a call can use different links; over a transport whose
// bytes move only while the sender progresses (the RDMA credit protocol),
// a rank blocked here would otherwise hold back the data (and the stamp)
// its peer waits for, and both would wait for the deadline instead of
// reporting the mismatch. A plain pointer pair: passing one costs nothing
// on the path where the connection already exists.
struct WhileWaiting {
  void (*run)(void* context) = nullptr;
  void* context = nullptr;
};

class Connector {
 public:
  // Collective over the communicator: exchanges listener addresses.
  // kinds[p] is the transport to use with peer p (both sides must agree);
  // each must be registered (carrierOf).
  Connector(bootstrap::Bootstrap& bootstrap, std::uint64_t magic, const std::atomic<bool>* abort,
            std::vector<TransportKind> kinds, const ConnectorOptions& options);
  ~Connector();  // closes its own descriptors of the sockets (SocketShutdownEntry)
  Connector(const Connector&) = delete;
  Connector& operator=(const Connector&) = delete;

  // `busy`: the connection will carry most of the traffic (ConnectionSetup).
  SendConnection& sendTo(int peer, bool busy = false);
  RecvConnection& recvFrom(int peer, WhileWaiting whileWaiting = {});
  TransportKind kindOf(int peer) const { return kinds_[peer]; }

  // Shuts every socket down: peers blocked on this rank see EOF at once.
  void shutdown();
  // This rank will move no more bytes (ncclCommFinalize): every connection
  // and the listener close now, as they would when the communicator is
  // destroyed, and later ones are refused. Only while no operation runs.
  void close();
  // Every send connection made so far releases the device registrations of
  // buffers the program deregistered (SendConnection::releaseDeregistered).
  // Only while no operation runs on this rank.
  void releaseDeregistered();


 private:
  // After the greeting (bootstrap/greeting.h), which carries the secret.
  struct Introduction {
    std::int32_t rank;
    std::int32_t kind;
  };
  Socket acceptFrom(int peer, const Deadline& deadline, WhileWaiting whileWaiting);
  [[noreturn]] void refuseAfterClose(int peer) const;
  // Every connection's socket, through the descriptors kept for that.
  void shutdownSockets();
  // The set-up of sendTo and recvFrom, which name the peer in its errors.
  SendConnection& connectTo(int peer, bool busy);
  RecvConnection& acceptConnectionFrom(int peer, WhileWaiting whileWaiting);

  bootstrap::Bootstrap& bootstrap_;
  std::uint64_t magic_;
  const std::atomic<bool>* abort_;
  std::vector<TransportKind> kinds_;
  ConnectorOptions options_;
  bootstrap::Gatekeeper gate_;  // our listener
  std::vector<SocketAddress> peerAddresses_;
  // By peer rank (null: not connected yet): every operation looks its
  // connections up here, so an index, not a search.
  std::vector<std::unique_ptr<SendConnection>> sends_;
  std::vector<std::unique_ptr<RecvConnection>> recvs_;
  std::map<int, Socket> earlyArrivals_;  // accepted, not yet asked for
  bool closed_ = false;                  // close()
  std::mutex socketsMutex_;              // shutdown() may come from another thread
  std::vector<int> socketFds_;           // for shutdown()
  // A socket's entry in socketFds_ while it becomes a connection (so that
  // an abort can end its handshake), taken out again unless keep() says
  // the connection, which owns the socket from then on, was made.
  class SocketShutdownEntry {
   public:
    SocketShutdownEntry(Connector& connector, int fd);
    ~SocketShutdownEntry();
    SocketShutdownEntry(const SocketShutdownEntry&) = delete;
    SocketShutdownEntry& operator=(const SocketShutdownEntry&) = delete;
    void keep() { kept_ = true; }

   private:
    Connector& connector_;
    int fd_;
    bool kept_ = false;
  };
};

}  // namespace hora::transport
