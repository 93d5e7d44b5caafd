// TCP sockets with deadlines and an abort flag: the only way hora talks to
// another process before (bootstrap) and outside (tcp transport) shared memory.
//
// Every blocking call waits in poll() slices of at most kPollSliceMs, so an
// abort request or an expired deadline is noticed promptly; errors name the
// peer (the `peer` text the caller gives), the syscall and errno.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "base/deadline.h"

namespace hora {

// Why a peer's end of a connection closed, in the words every transport
// uses: the first-cause search (core/communicator.cc) recognises them, to
// tell a peer that closed its communicator from one that went silent.
inline constexpr const char* kPeerClosedCause =
    "the peer process exited, or its program finalized, destroyed or aborted the communicator";

// An IPv4 or IPv6 address with port.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  int port() const;
  void setPort(int port);
  bool isLoopback() const;
  std::string toString() const;  // "127.0.0.1:1234" or "[::1]:1234"

  // "host:port", "[v6]:port"; host may be a name. Throws InvalidArgument.
  static SocketAddress parse(const std::string& hostPort);
  static SocketAddress resolve(const std::string& host, int port);
};

struct NetworkInterface {
  std::string name;
  SocketAddress address;  // port 0
  SocketAddress netmask;
};

// Interfaces that are up and have an address, in system order.
std::vector<NetworkInterface> listInterfaces();

// Filters interfaces with NCCL's NCCL_SOCKET_IFNAME syntax: a comma-separated
// list of name prefixes; a leading '^' excludes the listed ones instead; a
// leading '=' (after any '^') requires exact names.
std::vector<NetworkInterface> filterInterfaces(const std::vector<NetworkInterface>& all,
                                               const std::string& spec);

// The interface this rank listens on. HORA_SOCKET_IFNAME / NCCL_SOCKET_IFNAME
// choose it when set (a spec that matches nothing is an error naming the
// interfaces there are). Otherwise: the interface on the same subnet as
// `reach` (the root's address; loopback if it is loopback), else the first
// that is not loopback or docker, else loopback.
NetworkInterface chooseInterface(const SocketAddress* reach);

class Socket {
 public:
  static constexpr int kPollSliceMs = 50;

  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { close(); }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void close();
  // Shuts both directions down so a peer blocked on us sees EOF at once.
  void shutdown();

  // A listening socket bound to `address` (port 0: any free port).
  // The backlog holds connections made but not yet accepted: a rendezvous
  // root that every rank reaches at once, or a rank whose peers all open a
  // connection to it while it is busy (the first all-to-all). Once it is
  // full the kernel drops new attempts, which retry only after a second or
  // more; so as large as the kernel allows (it caps the value at
  // net.core.somaxconn).
  static constexpr int kListenBacklog = 4096;
  static Socket listen(const SocketAddress& address, int backlog = kListenBacklog);
  SocketAddress localAddress() const;

  // Accepts one connection, waiting until the deadline or abort.
  Socket accept(const Deadline& deadline, const std::atomic<bool>* abort, const std::string& what);

  // Connects, retrying refused/unreachable attempts until the deadline (the
  // listener may not be up yet: ranks start in any order). With
  // `listenerWasUp`, the caller knows the listener was listening before it
  // learnt the address, so a refusal means it has closed since (its process
  // exited, or closed its communicator): a Remote error at once.
  // `wasDown`, when given, is set when an attempt found no listener (so it
  // came up after this connect began).
  static Socket connect(const SocketAddress& address, const Deadline& deadline,
                        const std::atomic<bool>* abort, const std::string& peer,
                        bool listenerWasUp = false, bool* wasDown = nullptr);

  // Whole-buffer transfers with a deadline; EOF or reset is a Remote error.
  void sendAll(const void* data, std::size_t bytes, const Deadline& deadline,
               const std::atomic<bool>* abort, const std::string& peer);
  void recvAll(void* data, std::size_t bytes, const Deadline& deadline,
               const std::atomic<bool>* abort, const std::string& peer);

  // Non-blocking steps for event loops: bytes moved (0 if the call would
  // block). Errors and EOF throw Remote errors naming `peer`.
  std::size_t trySend(const void* data, std::size_t bytes, const std::string& peer);
  std::size_t tryRecv(void* data, std::size_t bytes, const std::string& peer);
  // trySend of `first` then `second` in one system call (a small header and
  // what follows it).
  std::size_t trySendTwo(const void* first, std::size_t firstBytes, const void* second,
                         std::size_t secondBytes, const std::string& peer);
  // tryRecv into `first`, then what else has come into `second`, in one
  // system call.
  std::size_t tryRecvTwo(void* first, std::size_t firstBytes, void* second, std::size_t secondBytes,
                         const std::string& peer);

  void setNonBlocking(bool on);
  void setNoDelay();
  void setBufferSizes(int bytes);

 private:
  int fd_ = -1;
};

// Waits until `fd` is ready for `events` (POLLIN/POLLOUT), the deadline passes
// (Remote error "timed out ... <what>") or abort is set (InvalidUsage "aborted").
void waitReady(int fd, short events, const Deadline& deadline, const std::atomic<bool>* abort,
               const std::string& what);

// Sends `sendBytes` on `sender` while receiving `recvBytes` on `receiver`,
// progressing both so that two peers exchanging large blocks cannot deadlock
// on full socket buffers. Either side may be empty.
void exchange(Socket& sender, const void* sendData, std::size_t sendBytes, const std::string& sendPeer,
              Socket& receiver, void* recvData, std::size_t recvBytes, const std::string& recvPeer,
              const Deadline& deadline, const std::atomic<bool>* abort);

}  // namespace hora
