#include "transport/connector.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "base/process_state.h"

namespace hora::transport {

Connector::Connector(bootstrap::Bootstrap& bootstrap, std::uint64_t magic,
                     const std::atomic<bool>* abort, std::vector<TransportKind> kinds,
                     const ConnectorOptions& options)
    : bootstrap_(bootstrap), magic_(magic), abort_(abort), kinds_(std::move(kinds)), options_(options) {
  HORA_ENFORCE(static_cast<int>(kinds_.size()) == bootstrap.nranks(), "one transport per peer");
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
  // A peer's pid means something here only on this host and in this pid
  // namespace, which is what an equal host hash says (localHostHash).
  const auto& peers = bootstrap.peers();
  watchable_.assign(peers.size(), false);
  for (std::size_t r = 0; r < peers.size(); ++r)
    watchable_[r] = static_cast<int>(r) != bootstrap.rank() &&
                    peers[r].hostHash == peers[bootstrap.rank()].hostHash;
}

SendConnection& Connector::sendTo(int peer, bool busy) {
  auto found = sends_.find(peer);
  if (found != sends_.end()) return *found->second;
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
  {
    std::lock_guard<std::mutex> lock(socketsMutex_);
    socketFds_.push_back(socket.fd());
  }
  std::unique_ptr<SendConnection> connection = findTransport(kinds_[peer])->connectSender(
      {std::move(socket), name, options_, deadline, abort_, busy});
  HORA_LOG(Trace, transportName(kinds_[peer]), ": sending to ", name);
  return *(sends_[peer] = std::move(connection));
}

Socket Connector::acceptFrom(int peer, const Deadline& deadline) {
  const std::string name = bootstrap_.describe(peer);
  const std::string waiting = strCat("waiting for ", name, " to connect");
  const pid_t pid = bootstrap_.peers()[peer].pid;
  // A peer that connected and then exited (its part done) left its
  // connection in our listener's backlog, with everything it sent: so a
  // gone process is an error only once the gatekeeper has had a few rounds
  // to accept and read what is already there.
  constexpr auto kDrainGrace = std::chrono::milliseconds(250);
  std::optional<Deadline> goneAndDrained;
  auto stillAlive = [&] {
    if (!watchable_[peer]) return;
    if (!goneAndDrained) {
      if (processGone(pid)) goneAndDrained = Deadline::after(kDrainGrace);
      return;
    }
    if (goneAndDrained->expired())
      fail(ErrorKind::Remote, name, " has exited (process ", pid, " is gone) while rank ", bootstrap_.rank(),
           " was ", waiting);
  };
  while (earlyArrivals_.count(peer) == 0) {
    // Strangers never come out of admit(): only peers holding the secret.
    bootstrap::Gatekeeper::Guest guest = gate_.admit(deadline, abort_, waiting, stillAlive);
    Introduction hello{};
    std::memcpy(&hello, guest.body.data(), sizeof(hello));
    if (hello.rank < 0 || hello.rank >= bootstrap_.nranks() ||
        (hello.kind != kNotice && (earlyArrivals_.count(hello.rank) || recvs_.count(hello.rank)))) {
      HORA_LOG(Warn, "refusing a connection from ", guest.from.toString(),
               " that claims to be rank ", hello.rank);
      continue;
    }
    Socket socket = std::move(guest.socket);
    if (hello.kind == kNotice) throw readNotice(socket, hello.rank);
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

RecvConnection& Connector::recvFrom(int peer) {
  auto found = recvs_.find(peer);
  if (found != recvs_.end()) return *found->second;
  Deadline deadline = Deadline::after(options_.timeout);
  std::string name = bootstrap_.describe(peer);
  Socket socket = acceptFrom(peer, deadline);
  {
    std::lock_guard<std::mutex> lock(socketsMutex_);
    socketFds_.push_back(socket.fd());
  }
  std::unique_ptr<RecvConnection> connection = findTransport(kinds_[peer])->connectReceiver(
      {std::move(socket), name, options_, deadline, abort_});
  HORA_LOG(Trace, transportName(kinds_[peer]), ": receiving from ", name);
  return *(recvs_[peer] = std::move(connection));
}

void Connector::shutdown() {
  std::lock_guard<std::mutex> lock(socketsMutex_);
  for (int fd : socketFds_) ::shutdown(fd, SHUT_RDWR);
  bootstrap_.shutdown();
}

}  // namespace hora::transport

namespace hora::transport {

namespace {
// A notice is a rank's last word: it must not hold that rank up.
constexpr auto kAnnounceBudget = std::chrono::milliseconds(1000);
constexpr auto kAnnouncePerPeer = std::chrono::milliseconds(200);
}  // namespace

void Connector::announce(const Error& error) {
  std::string text = error.what();
  if (text.size() > kMaxNoticeBytes) text.resize(kMaxNoticeBytes);
  const NoticeHeader header{static_cast<std::int32_t>(error.kind()), static_cast<std::uint32_t>(text.size())};
  std::vector<char> message(sizeof(header) + text.size());
  std::memcpy(message.data(), &header, sizeof(header));
  std::memcpy(message.data() + sizeof(header), text.data(), text.size());
  const Deadline all = Deadline::after(kAnnounceBudget);
  for (int peer = 0; peer < bootstrap_.nranks(); ++peer) {
    if (peer == bootstrap_.rank() || all.expired()) continue;
    try {
      const Deadline deadline = Deadline::after(kAnnouncePerPeer);
      const std::string name = bootstrap_.describe(peer);
      Socket socket = Socket::connect(peerAddresses_[peer], deadline, nullptr, name, /*listenerWasUp=*/true);
      const Introduction hello{bootstrap_.rank(), kNotice};
      bootstrap::sendGreeting(socket, magic_, bootstrap::Purpose::Connection, &hello, sizeof(hello),
                              deadline, nullptr, name);
      socket.sendAll(message.data(), message.size(), deadline, nullptr, name);
    } catch (const Error& failure) {
      HORA_LOG(Info, "rank ", bootstrap_.rank(), ": could not tell ", bootstrap_.describe(peer),
               " why the communicator stopped: ", failure.what());
    }
  }
}

PeerNotice Connector::readNotice(Socket& socket, int from) {
  const Deadline deadline = Deadline::after(bootstrap::kGreetingPatience);
  const std::string name = bootstrap_.describe(from);
  NoticeHeader header{};
  socket.recvAll(&header, sizeof(header), deadline, nullptr, name);
  std::string text(std::min(header.textBytes, kMaxNoticeBytes), '\0');
  socket.recvAll(text.data(), text.size(), deadline, nullptr, name);
  const auto kind = static_cast<ErrorKind>(header.errorKind);
  return PeerNotice(kind == ErrorKind::InvalidUsage ? kind : ErrorKind::Remote,
                    strCat("rank ", bootstrap_.rank(), ": the communicator was stopped by rank ", from,
                           ", which found: ", text));
}

std::optional<PeerNotice> Connector::noticeWithin(std::chrono::milliseconds grace) {
  const Deadline deadline = Deadline::after(grace);
  for (;;) {
    bootstrap::Gatekeeper::Guest guest;
    try {
      guest = gate_.admit(deadline, nullptr, "waiting for a peer's notice");
    } catch (const Error&) {
      return std::nullopt;  // none came
    }
    Introduction hello{};
    std::memcpy(&hello, guest.body.data(), sizeof(hello));
    if (hello.rank < 0 || hello.rank >= bootstrap_.nranks() || hello.rank == bootstrap_.rank()) continue;
    if (hello.kind == kNotice) {
      try {
        return readNotice(guest.socket, hello.rank);
      } catch (const Error&) {
        continue;  // the notice was cut short
      }
    }
    // A data connection opened early: keep it for recvFrom.
    if (!earlyArrivals_.count(hello.rank) && !recvs_.count(hello.rank))
      earlyArrivals_[hello.rank] = std::move(guest.socket);
  }
}

}  // namespace hora::transport
