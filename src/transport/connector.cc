#include "transport/connector.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "base/process_state.h"

namespace hora::transport {

namespace {
// In a handler: a peer's failure met while setting up a connection with it
// (its process gone, its socket closed) names that peer, as the progress
// engine's errors do, so that the first cause can be told; anything else
// goes on as it was.
[[noreturn]] void rethrowNamingPeer(const Error& error, int peer) {
  if (error.kind() != ErrorKind::Remote || error.failedRank() >= 0) throw;
  throw Error(error.kind(), error.what(), peer);
}
}  // namespace

void Connector::refuseAfterClose(int peer) const {
  fail(ErrorKind::InvalidUsage, "rank ", bootstrap_.rank(), ": no connection to ", bootstrap_.describe(peer),
       " after the communicator was finalized (ncclCommFinalize)");
}

Connector::Connector(bootstrap::Bootstrap& bootstrap, std::uint64_t magic,
                     const std::atomic<bool>* abort, std::vector<TransportKind> kinds,
                     const ConnectorOptions& options)
    : bootstrap_(bootstrap), magic_(magic), abort_(abort), kinds_(std::move(kinds)), options_(options) {
  HORA_ENFORCE(static_cast<int>(kinds_.size()) == bootstrap.nranks(), "one transport per peer");
  sends_.resize(kinds_.size());
  recvs_.resize(kinds_.size());
  for (TransportKind kind : kinds_)
    HORA_ENFORCE(findTransport(kind) != nullptr, "no transport registered for ", transportName(kind));
  SocketAddress bindAddress = bootstrap.localAddress();
  bindAddress.setPort(0);
  gate_ = bootstrap::Gatekeeper(Socket::listen(bindAddress),
                                {magic, bootstrap::Purpose::Connection, sizeof(Introduction),
                                 "transport listener", ""});
  // Exchange listener addresses through the bootstrap ring.
  std::vector<sockaddr_storage> all(bootstrap.nranks());
  SocketAddress mine = gate_.localAddress();
  std::memcpy(&all[bootstrap.rank()], &mine.storage, sizeof(sockaddr_storage));
  bootstrap.allGather(all.data(), sizeof(sockaddr_storage), Deadline::after(options.timeout));
  peerAddresses_.resize(all.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    std::memcpy(&peerAddresses_[r].storage, &all[r], sizeof(sockaddr_storage));
    peerAddresses_[r].length = all[r].ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  }
}

SendConnection& Connector::sendTo(int peer, bool busy) {
  if (SendConnection* known = sends_.at(peer).get()) return *known;
  try {
    return connectTo(peer, busy);
  } catch (const Error& error) {
    rethrowNamingPeer(error, peer);
  }
}

SendConnection& Connector::connectTo(int peer, bool busy) {
  if (closed_) refuseAfterClose(peer);
  Deadline deadline = Deadline::after(options_.timeout);
  std::string name = bootstrap_.describe(peer);
  // The listener was up before its address was shared: a refusal means
  // the peer has gone.
  Socket socket = Socket::connect(peerAddresses_[peer], deadline, abort_,
                                  strCat(name, " at ", peerAddresses_[peer].toString()),
                                  /*listenerWasUp=*/true);
  Introduction hello{bootstrap_.rank(), static_cast<std::int32_t>(kinds_[peer])};
  bootstrap::sendGreeting(socket, magic_, bootstrap::Purpose::Connection, &hello, sizeof(hello),
                          deadline, abort_, name);
  SocketShutdownEntry entry(*this, socket.fd());
  std::unique_ptr<SendConnection> connection = findTransport(kinds_[peer])->connectSender(
      {std::move(socket), name, options_, deadline, abort_, busy});
  entry.keep();
  connection->setPeerRank(peer);
  HORA_LOG(Trace, transportName(kinds_[peer]), ": sending to ", name);
  return *(sends_[peer] = std::move(connection));
}

Socket Connector::acceptFrom(int peer, const Deadline& deadline, WhileWaiting whileWaiting) {
  const std::string name = bootstrap_.describe(peer);
  const std::string waiting = strCat("waiting for ", name, " to connect");
  const pid_t pid = bootstrap_.peers()[peer].pid;
  // A peer that connected and then exited (its part done) left its
  // connection in our listener's backlog, with everything it sent: so a
  // gone process is an error only once the gatekeeper has had a few rounds
  // to accept and read what is already there.
  constexpr auto kDrainGrace = std::chrono::milliseconds(250);
  std::optional<Deadline> goneAndDrained;
  // Every so often: has another rank stopped the communicator (its notice
  // is the error), or has the peer died (on this host: its pid; elsewhere:
  // its bootstrap listener refuses)?
  Deadline nextLook = Deadline::after(bootstrap::kLookForDeadPeers);
  auto stillAlive = [&] {
    if (whileWaiting.run != nullptr) whileWaiting.run(whileWaiting.context);
    if (!goneAndDrained && nextLook.expired()) {
      nextLook = Deadline::after(bootstrap::kLookForDeadPeers);
      if (auto notice = bootstrap_.noticeWithin(std::chrono::milliseconds(0))) throw *notice;
      if (bootstrap_.peerGone(peer)) goneAndDrained = Deadline::after(kDrainGrace);
      return;
    }
    if (goneAndDrained && goneAndDrained->expired())
      throw Error(ErrorKind::Remote,
                  strCat("rank ", bootstrap_.rank(), ": ", name, " failed first: its process is gone (pid ", pid,
                         ") while rank ", bootstrap_.rank(), " was ", waiting),
                  peer);
  };
  while (earlyArrivals_.count(peer) == 0) {
    // Strangers never come out of admit(): only peers holding the secret.
    bootstrap::Gatekeeper::Guest guest = gate_.admit(deadline, abort_, waiting, stillAlive);
    Introduction hello{};
    std::memcpy(&hello, guest.body.data(), sizeof(hello));
    if (hello.rank < 0 || hello.rank >= bootstrap_.nranks() || earlyArrivals_.count(hello.rank) ||
        recvs_[hello.rank] != nullptr) {
      HORA_LOG(Warn, "refusing a connection from ", guest.from.toString(),
               " that claims to be rank ", hello.rank);
      continue;
    }
    Socket socket = std::move(guest.socket);
    if (hello.kind != static_cast<std::int32_t>(kinds_[hello.rank]))
      fail(ErrorKind::InvalidUsage, "rank ", bootstrap_.rank(), " and ", bootstrap_.describe(hello.rank),
           " disagree on their transport (", transportName(kinds_[hello.rank]), " here, ",
           transportName(static_cast<TransportKind>(hello.kind)),
           " there): are HORA_TRANSPORT / NCCL_SHM_DISABLE set the same on every rank?");
    earlyArrivals_[hello.rank] = std::move(socket);
  }
  Socket socket = std::move(earlyArrivals_[peer]);
  earlyArrivals_.erase(peer);
  return socket;
}

RecvConnection& Connector::recvFrom(int peer, WhileWaiting whileWaiting) {
  if (RecvConnection* known = recvs_.at(peer).get()) return *known;
  try {
    return acceptConnectionFrom(peer, whileWaiting);
  } catch (const Error& error) {
    rethrowNamingPeer(error, peer);
  }
}

RecvConnection& Connector::acceptConnectionFrom(int peer, WhileWaiting whileWaiting) {
  if (closed_) refuseAfterClose(peer);
  Deadline deadline = Deadline::after(options_.timeout);
  std::string name = bootstrap_.describe(peer);
  Socket socket = acceptFrom(peer, deadline, whileWaiting);
  SocketShutdownEntry entry(*this, socket.fd());
  std::unique_ptr<RecvConnection> connection = findTransport(kinds_[peer])->connectReceiver(
      {std::move(socket), name, options_, deadline, abort_});
  entry.keep();
  connection->setPeerRank(peer);
  HORA_LOG(Trace, transportName(kinds_[peer]), ": receiving from ", name);
  return *(recvs_[peer] = std::move(connection));
}

Connector::SocketShutdownEntry::SocketShutdownEntry(Connector& connector, int fd)
    : connector_(connector), fd_(::fcntl(fd, F_DUPFD_CLOEXEC, 0)) {
  // A descriptor of our own for the socket: shutdown() through it ends the
  // connection whoever holds the socket, and while we hold it its number
  // names no other file. (Out of descriptors: no entry; the handshake's
  // deadline still ends it.)
  if (fd_ < 0) return;
  std::lock_guard<std::mutex> lock(connector_.socketsMutex_);
  connector_.socketFds_.push_back(fd_);
}

Connector::SocketShutdownEntry::~SocketShutdownEntry() {
  if (kept_ || fd_ < 0) return;
  // The connection was not made: nothing left to shut down.
  {
    std::lock_guard<std::mutex> lock(connector_.socketsMutex_);
    auto& fds = connector_.socketFds_;
    fds.erase(std::remove(fds.begin(), fds.end(), fd_), fds.end());
  }
  ::close(fd_);
}

Connector::~Connector() {
  for (int fd : socketFds_) ::close(fd);
}

void Connector::releaseDeregistered() {
  for (const auto& connection : sends_)
    if (connection) connection->releaseDeregistered();
}

void Connector::close() {
  // A shutdown first: the peer reads what this rank sent before it sees
  // the end (a close with unread bytes could reset the connection).
  shutdownSockets();
  closed_ = true;
  for (auto& connection : sends_) connection.reset();
  for (auto& connection : recvs_) connection.reset();
  earlyArrivals_.clear();
  gate_ = {};
}

void Connector::shutdownSockets() {
  std::lock_guard<std::mutex> lock(socketsMutex_);
  for (int fd : socketFds_) ::shutdown(fd, SHUT_RDWR);
}

void Connector::shutdown() {
  shutdownSockets();
  bootstrap_.shutdown();
}

}  // namespace hora::transport
