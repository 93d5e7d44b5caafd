// The TCP transport of one communicator: a listener on the chosen interface,
// and one connection per (peer, direction), made on first use. The sending
// side connects and introduces itself; the receiving side accepts until the
// expected peer has arrived, keeping early arrivals from other peers for later.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/tcp/tcp_connection.h"

namespace hora::transport {

class TcpTransport {
 public:
  // Collective over the communicator: exchanges listener addresses.
  TcpTransport(bootstrap::Bootstrap& bootstrap, std::uint64_t magic, const std::atomic<bool>* abort,
               std::chrono::milliseconds timeout);

  TcpSendConnection& sendTo(int peer);
  TcpRecvConnection& recvFrom(int peer);

  // Shuts every socket down: peers blocked on this rank see EOF at once.
  void shutdown();

 private:
  struct Introduction {
    std::uint64_t magic;
    std::int32_t rank;
  };
  bootstrap::Bootstrap& bootstrap_;
  std::uint64_t magic_;
  const std::atomic<bool>* abort_;
  std::chrono::milliseconds timeout_;
  Socket listener_;
  std::vector<SocketAddress> peerAddresses_;
  std::map<int, std::unique_ptr<TcpSendConnection>> sends_;
  std::map<int, std::unique_ptr<TcpRecvConnection>> recvs_;
  std::map<int, Socket> earlyArrivals_;  // accepted, not yet asked for
};

}  // namespace hora::transport
