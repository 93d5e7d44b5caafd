#include "transport/tcp/tcp_transport.h"

#include <cstring>

#include "base/error.h"
#include "base/log.h"

namespace hora::transport {

TcpTransport::TcpTransport(bootstrap::Bootstrap& bootstrap, std::uint64_t magic,
                           const std::atomic<bool>* abort, std::chrono::milliseconds timeout)
    : bootstrap_(bootstrap), magic_(magic), abort_(abort), timeout_(timeout) {
  SocketAddress bindAddress = bootstrap.localAddress();
  bindAddress.setPort(0);
  listener_ = Socket::listen(bindAddress);
  // Exchange listener addresses through the bootstrap ring.
  std::vector<sockaddr_storage> all(bootstrap.nranks());
  SocketAddress mine = listener_.localAddress();
  std::memcpy(&all[bootstrap.rank()], &mine.storage, sizeof(sockaddr_storage));
  bootstrap.allGather(all.data(), sizeof(sockaddr_storage), Deadline::after(timeout));
  peerAddresses_.resize(all.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    std::memcpy(&peerAddresses_[r].storage, &all[r], sizeof(sockaddr_storage));
    peerAddresses_[r].length = all[r].ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  }
}

TcpSendConnection& TcpTransport::sendTo(int peer) {
  auto found = sends_.find(peer);
  if (found != sends_.end()) return *found->second;
  Deadline deadline = Deadline::after(timeout_);
  std::string name = bootstrap_.describe(peer);
  Socket socket = Socket::connect(peerAddresses_[peer], deadline, abort_, name);
  Introduction hello{magic_, bootstrap_.rank()};
  socket.sendAll(&hello, sizeof(hello), deadline, abort_, name);
  HORA_LOG(Trace, "tcp: connected to ", name, " at ", peerAddresses_[peer].toString());
  auto connection = std::make_unique<TcpSendConnection>(std::move(socket), name);
  return *(sends_[peer] = std::move(connection));
}

TcpRecvConnection& TcpTransport::recvFrom(int peer) {
  auto found = recvs_.find(peer);
  if (found != recvs_.end()) return *found->second;
  Deadline deadline = Deadline::after(timeout_);
  std::string name = bootstrap_.describe(peer);
  while (earlyArrivals_.count(peer) == 0) {
    Socket socket = listener_.accept(deadline, abort_, strCat("waiting for ", name, " to connect"));
    Introduction hello{};
    socket.recvAll(&hello, sizeof(hello), deadline, abort_, "a connecting peer");
    if (hello.magic != magic_ || hello.rank < 0 || hello.rank >= bootstrap_.nranks() ||
        earlyArrivals_.count(hello.rank) || recvs_.count(hello.rank)) {
      HORA_LOG(Warn, "tcp: refusing a connection that claims to be rank ", hello.rank);
      continue;
    }
    earlyArrivals_[hello.rank] = std::move(socket);
  }
  Socket socket = std::move(earlyArrivals_[peer]);
  earlyArrivals_.erase(peer);
  HORA_LOG(Trace, "tcp: accepted ", name);
  auto connection = std::make_unique<TcpRecvConnection>(std::move(socket), name);
  return *(recvs_[peer] = std::move(connection));
}

void TcpTransport::shutdown() {
  for (auto& [peer, connection] : sends_) connection->socket().shutdown();
  for (auto& [peer, connection] : recvs_) connection->socket().shutdown();
  bootstrap_.shutdown();
}

}  // namespace hora::transport
