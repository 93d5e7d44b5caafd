#include "base/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

#include "base/env.h"
#include "base/error.h"
#include "base/log.h"

namespace hora {

namespace {
// Errors of an established connection that say the peer, or the path to
// it, failed (retransmissions unanswered, a route or link gone): the
// peer's failure as far as this rank can tell, not this rank's.
bool pathToPeerFailed(int error) {
  return error == ETIMEDOUT || error == EHOSTUNREACH || error == ENETUNREACH || error == EHOSTDOWN ||
         error == ENETDOWN;
}
}  // namespace

// ---------------------------------------------------------------- addresses

int SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(storage).sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(storage).sin6_port);
  return 0;
}

void SocketAddress::setPort(int port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in&>(storage).sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6&>(storage).sin6_port = htons(port);
}

bool SocketAddress::isLoopback() const {
  if (family() == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in&>(storage).sin_addr.s_addr) >> 24) == 127;
  if (family() == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6&>(storage).sin6_addr);
  return false;
}

std::string SocketAddress::toString() const {
  char host[INET6_ADDRSTRLEN] = {0};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(storage).sin_addr, host, sizeof(host));
    return strCat(host, ":", port());
  }
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(storage).sin6_addr, host,
              sizeof(host));
    return strCat("[", host, "]:", port());
  }
  return "<no address>";
}

SocketAddress SocketAddress::resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0 || result == nullptr)
    fail(ErrorKind::InvalidArgument, "cannot resolve host '", host, "': ", gai_strerror(rc));
  SocketAddress address;
  std::memcpy(&address.storage, result->ai_addr, result->ai_addrlen);
  address.length = result->ai_addrlen;
  freeaddrinfo(result);
  address.setPort(port);
  return address;
}

SocketAddress SocketAddress::parse(const std::string& hostPort) {
  std::string host, portText;
  if (!hostPort.empty() && hostPort[0] == '[') {
    auto close = hostPort.find(']');
    if (close == std::string::npos || close + 1 >= hostPort.size() || hostPort[close + 1] != ':')
      fail(ErrorKind::InvalidArgument, "address '", hostPort, "' is not [ipv6]:port");
    host = hostPort.substr(1, close - 1);
    portText = hostPort.substr(close + 2);
  } else {
    auto colon = hostPort.rfind(':');
    if (colon == std::string::npos)
      fail(ErrorKind::InvalidArgument, "address '", hostPort, "' has no ':port'");
    host = hostPort.substr(0, colon);
    portText = hostPort.substr(colon + 1);
  }
  char* end = nullptr;
  long port = std::strtol(portText.c_str(), &end, 10);
  if (portText.empty() || *end != '\0' || port < 0 || port > 65535)
    fail(ErrorKind::InvalidArgument, "address '", hostPort, "' has an invalid port");
  return resolve(host, static_cast<int>(port));
}

// --------------------------------------------------------------- interfaces

std::vector<NetworkInterface> listInterfaces() {
  std::vector<NetworkInterface> result;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) fail(ErrorKind::System, "getifaddrs failed: ", errnoText(errno));
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || !(it->ifa_flags & IFF_UP)) continue;
    int family = it->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (family == AF_INET6) {
      // Link-local IPv6 addresses need a scope id to be reachable; skip them.
      auto* in6 = reinterpret_cast<sockaddr_in6*>(it->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;
    }
    NetworkInterface entry;
    entry.name = it->ifa_name;
    socklen_t length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&entry.address.storage, it->ifa_addr, length);
    entry.address.length = length;
    if (it->ifa_netmask != nullptr) {
      std::memcpy(&entry.netmask.storage, it->ifa_netmask, length);
      entry.netmask.length = length;
    }
    result.push_back(entry);
  }
  freeifaddrs(list);
  // IPv4 first: that is what users name in MASTER_ADDR most of the time.
  std::stable_sort(result.begin(), result.end(), [](const auto& a, const auto& b) {
    return a.address.family() == AF_INET && b.address.family() != AF_INET;
  });
  return result;
}

std::vector<NetworkInterface> filterInterfaces(const std::vector<NetworkInterface>& all,
                                               const std::string& spec) {
  std::string rest = spec;
  bool exclude = false, exact = false;
  if (!rest.empty() && rest[0] == '^') exclude = true, rest.erase(0, 1);
  if (!rest.empty() && rest[0] == '=') exact = true, rest.erase(0, 1);
  std::vector<std::string> patterns;
  std::stringstream stream(rest);
  for (std::string item; std::getline(stream, item, ',');)
    if (!item.empty()) patterns.push_back(item);
  std::vector<NetworkInterface> result;
  for (const auto& interface : all) {
    bool matched = false;
    for (const auto& pattern : patterns)
      matched |= exact ? interface.name == pattern : interface.name.rfind(pattern, 0) == 0;
    if (matched != exclude) result.push_back(interface);
  }
  return result;
}

namespace {
bool sameSubnet(const NetworkInterface& interface, const SocketAddress& target) {
  if (interface.address.family() != target.family() || interface.netmask.length == 0) return false;
  if (target.family() == AF_INET) {
    auto mask = reinterpret_cast<const sockaddr_in&>(interface.netmask.storage).sin_addr.s_addr;
    auto a = reinterpret_cast<const sockaddr_in&>(interface.address.storage).sin_addr.s_addr;
    auto b = reinterpret_cast<const sockaddr_in&>(target.storage).sin_addr.s_addr;
    return (a & mask) == (b & mask);
  }
  const auto& mask = reinterpret_cast<const sockaddr_in6&>(interface.netmask.storage).sin6_addr;
  const auto& a = reinterpret_cast<const sockaddr_in6&>(interface.address.storage).sin6_addr;
  const auto& b = reinterpret_cast<const sockaddr_in6&>(target.storage).sin6_addr;
  for (int i = 0; i < 16; ++i)
    if ((a.s6_addr[i] & mask.s6_addr[i]) != (b.s6_addr[i] & mask.s6_addr[i])) return false;
  return true;
}

std::string interfaceNames(const std::vector<NetworkInterface>& list) {
  std::vector<std::string> names;  // an interface with IPv4 and IPv6 is listed once
  for (const auto& interface : list)
    if (std::find(names.begin(), names.end(), interface.name) == names.end())
      names.push_back(interface.name);
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "none" : text;
}
}  // namespace

NetworkInterface chooseInterface(const SocketAddress* reach) {
  auto all = listInterfaces();
  if (auto spec = env::get({"HORA_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"})) {
    auto chosen = filterInterfaces(all, *spec);
    if (chosen.empty())
      fail(ErrorKind::InvalidArgument, "socket interface '", *spec,
           "' (HORA_SOCKET_IFNAME/NCCL_SOCKET_IFNAME) matches no interface that is up; this "
           "host has: ", interfaceNames(all));
    if (reach != nullptr)
      for (const auto& interface : chosen)
        if (interface.address.family() == reach->family()) return interface;
    return chosen.front();
  }
  if (reach != nullptr) {
    for (const auto& interface : all)
      if (reach->isLoopback() ? interface.address.isLoopback() : sameSubnet(interface, *reach))
        return interface;
  }
  for (const auto& interface : all)
    if (!interface.address.isLoopback() && interface.name.rfind("docker", 0) != 0 &&
        interface.name.rfind("virbr", 0) != 0)
      return interface;
  for (const auto& interface : all)
    if (interface.address.isLoopback()) return interface;
  fail(ErrorKind::System, "no usable network interface (interfaces up: ", interfaceNames(all), ")");
}

// ------------------------------------------------------------------ sockets

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void waitReady(int fd, short events, const Deadline& deadline, const std::atomic<bool>* abort,
               const std::string& what) {
  for (;;) {
    if (abort != nullptr && abort->load(std::memory_order_relaxed))
      fail(ErrorKind::InvalidUsage, "communicator aborted while ", what);
    if (deadline.expired())
      fail(ErrorKind::Remote, "timed out ", what, " (HORA_TIMEOUT, or the timeout the program gave; the peer may be hung or dead)");
    pollfd entry{fd, events, 0};
    int rc = ::poll(&entry, 1, deadline.pollTimeoutMs(Socket::kPollSliceMs));
    if (rc > 0) return;  // ready, or an error the next syscall will report
    if (rc < 0 && errno != EINTR) fail(ErrorKind::System, "poll failed ", what, ": ", errnoText(errno));
  }
}

Socket Socket::listen(const SocketAddress& address, int backlog) {
  Socket socket(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket.valid()) fail(ErrorKind::System, "socket() failed: ", errnoText(errno));
  int one = 1;
  ::setsockopt(socket.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(socket.fd(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0)
    fail(ErrorKind::System, "bind to ", address.toString(), " failed: ", errnoText(errno));
  if (::listen(socket.fd(), backlog) != 0)
    fail(ErrorKind::System, "listen on ", address.toString(), " failed: ", errnoText(errno));
  return socket;
}

SocketAddress Socket::localAddress() const {
  SocketAddress address;
  address.length = sizeof(address.storage);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0)
    fail(ErrorKind::System, "getsockname failed: ", errnoText(errno));
  return address;
}

Socket Socket::accept(const Deadline& deadline, const std::atomic<bool>* abort,
                      const std::string& what) {
  for (;;) {
    waitReady(fd_, POLLIN, deadline, abort, what);
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return Socket(fd);
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
      fail(ErrorKind::System, "accept failed ", what, ": ", errnoText(errno));
  }
}

Socket Socket::connect(const SocketAddress& address, const Deadline& deadline,
                       const std::atomic<bool>* abort, const std::string& peer, bool listenerWasUp,
                       bool* wasDown) {
  int lastError = 0;
  for (int attempt = 0;; ++attempt) {
    if (abort != nullptr && abort->load())
      fail(ErrorKind::InvalidUsage, "communicator aborted while connecting to ", peer);
    Socket socket(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!socket.valid()) fail(ErrorKind::System, "socket() failed: ", errnoText(errno));
    int rc = ::connect(socket.fd(), reinterpret_cast<const sockaddr*>(&address.storage),
                       address.length);
    if (rc != 0 && errno == EINPROGRESS) {
      waitReady(socket.fd(), POLLOUT, deadline, abort, strCat("connecting to ", peer));
      socklen_t length = sizeof(rc);
      ::getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &rc, &length);
      errno = rc;
    }
    if (rc == 0) {
      socket.setNonBlocking(false);
      return socket;
    }
    lastError = errno;
    if (lastError == ECONNREFUSED && listenerWasUp)
      fail(ErrorKind::Remote, peer, " refused the connection: its listener was up and has closed, so it has "
           "exited or destroyed its communicator");
    // A reset while connecting: the listener closed with the connection in
    // its backlog (its process exited).
    if (lastError == ECONNRESET)
      fail(ErrorKind::Remote, "connect to ", peer, " failed: ", errnoText(lastError),
           ": its listener closed while this rank was connecting (the peer exited or destroyed its communicator)");
    bool retryable = lastError == ECONNREFUSED || lastError == ETIMEDOUT ||
                     lastError == EHOSTUNREACH || lastError == ENETUNREACH || lastError == EAGAIN;
    if (!retryable)
      fail(ErrorKind::System, "connect to ", peer, " failed: ", errnoText(lastError));
    if (wasDown != nullptr) *wasDown = true;
    if (deadline.expired())
      fail(ErrorKind::Remote, "timed out connecting to ", peer, " (last error ",
           errnoText(lastError), "; is it running? HORA_TIMEOUT)");
    // Back off a little: the listener may still be starting.
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt < 20 ? 10 : 100));
  }
}

std::size_t Socket::trySendTwo(const void* first, std::size_t firstBytes, const void* second,
                               std::size_t secondBytes, const std::string& peer) {
  iovec parts[2] = {{const_cast<void*>(first), firstBytes}, {const_cast<void*>(second), secondBytes}};
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = secondBytes > 0 ? 2 : 1;
  for (;;) {
    ssize_t n = ::sendmsg(fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (errno == EPIPE || errno == ECONNRESET)
      fail(ErrorKind::Remote, "connection to ", peer, " lost while sending (", errnoText(errno),
           "): ", kPeerClosedCause);
    if (pathToPeerFailed(errno))
      fail(ErrorKind::Remote, "connection to ", peer, " lost while sending (", errnoText(errno),
           "): the peer's host stopped answering, or the network to it failed");
    fail(ErrorKind::System, "send to ", peer, " failed: ", errnoText(errno));
  }
}

std::size_t Socket::tryRecvTwo(void* first, std::size_t firstBytes, void* second, std::size_t secondBytes,
                               const std::string& peer) {
  iovec parts[2] = {{first, firstBytes}, {second, secondBytes}};
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = secondBytes > 0 ? 2 : 1;
  for (;;) {
    ssize_t n = ::recvmsg(fd_, &message, MSG_DONTWAIT);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == 0)
      fail(ErrorKind::Remote, "connection from ", peer,
           " closed while receiving: ", kPeerClosedCause);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (errno == ECONNRESET)
      fail(ErrorKind::Remote, "connection from ", peer, " reset while receiving (", errnoText(errno),
           "): ", kPeerClosedCause);
    if (pathToPeerFailed(errno))
      fail(ErrorKind::Remote, "connection from ", peer, " lost while receiving (", errnoText(errno),
           "): the peer's host stopped answering, or the network to it failed");
    fail(ErrorKind::System, "recv from ", peer, " failed: ", errnoText(errno));
  }
}

std::size_t Socket::trySend(const void* data, std::size_t bytes, const std::string& peer) {
  return trySendTwo(data, bytes, nullptr, 0, peer);
}

std::size_t Socket::tryRecv(void* data, std::size_t bytes, const std::string& peer) {
  return tryRecvTwo(data, bytes, nullptr, 0, peer);
}

void Socket::sendAll(const void* data, std::size_t bytes, const Deadline& deadline,
                     const std::atomic<bool>* abort, const std::string& peer) {
  auto* cursor = static_cast<const char*>(data);
  while (bytes > 0) {
    std::size_t sent = trySend(cursor, bytes, peer);
    cursor += sent;
    bytes -= sent;
    if (bytes > 0 && sent == 0) waitReady(fd_, POLLOUT, deadline, abort, strCat("sending to ", peer));
  }
}

void Socket::recvAll(void* data, std::size_t bytes, const Deadline& deadline,
                     const std::atomic<bool>* abort, const std::string& peer) {
  auto* cursor = static_cast<char*>(data);
  while (bytes > 0) {
    std::size_t got = tryRecv(cursor, bytes, peer);
    cursor += got;
    bytes -= got;
    if (bytes > 0 && got == 0)
      waitReady(fd_, POLLIN, deadline, abort, strCat("waiting for data from ", peer));
  }
}

void Socket::setNonBlocking(bool on) {
  int flags = ::fcntl(fd_, F_GETFL, 0);
  ::fcntl(fd_, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

void Socket::setNoDelay() {
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void Socket::setBufferSizes(int bytes) {
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

void exchange(Socket& sender, const void* sendData, std::size_t sendBytes, const std::string& sendPeer,
              Socket& receiver, void* recvData, std::size_t recvBytes, const std::string& recvPeer,
              const Deadline& deadline, const std::atomic<bool>* abort) {
  auto* out = static_cast<const char*>(sendData);
  auto* in = static_cast<char*>(recvData);
  while (sendBytes > 0 || recvBytes > 0) {
    std::size_t moved = 0;
    if (sendBytes > 0) {
      std::size_t n = sender.trySend(out, sendBytes, sendPeer);
      out += n, sendBytes -= n, moved += n;
    }
    if (recvBytes > 0) {
      std::size_t n = receiver.tryRecv(in, recvBytes, recvPeer);
      in += n, recvBytes -= n, moved += n;
    }
    if (moved > 0 || (sendBytes == 0 && recvBytes == 0)) continue;
    if (abort != nullptr && abort->load(std::memory_order_relaxed))
      fail(ErrorKind::InvalidUsage, "communicator aborted while exchanging with ", recvPeer);
    if (deadline.expired()) {
      // Name what is still missing, and a peer once (in a ring of two the
      // next and the previous rank are the same).
      std::string stuck;
      if (sendBytes > 0 && recvBytes > 0 && sendPeer == recvPeer)
        stuck = strCat("sending to and receiving from ", sendPeer);
      else if (sendBytes > 0 && recvBytes > 0)
        stuck = strCat("sending to ", sendPeer, " and receiving from ", recvPeer);
      else
        stuck = sendBytes > 0 ? strCat("sending to ", sendPeer) : strCat("receiving from ", recvPeer);
      fail(ErrorKind::Remote, "timed out ", stuck,
           " (HORA_TIMEOUT): the peer never made the matching call, or is hung or dead");
    }
    pollfd entries[2];
    int count = 0;
    if (sendBytes > 0) entries[count++] = {sender.fd(), POLLOUT, 0};
    if (recvBytes > 0) entries[count++] = {receiver.fd(), POLLIN, 0};
    int rc = ::poll(entries, count, deadline.pollTimeoutMs(Socket::kPollSliceMs));
    if (rc < 0 && errno != EINTR) fail(ErrorKind::System, "poll failed: ", errnoText(errno));
  }
}

}  // namespace hora
