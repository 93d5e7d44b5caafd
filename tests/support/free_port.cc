#include "support/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <stdexcept>

namespace hora::test_support {

namespace {

// Binds a fresh socket to 127.0.0.1:`port` (0: the kernel picks) and
// returns the port bound, or -1 when it is taken.
int tryBind(int port) {
  // Close-on-exec: tests that fork and exec must not leak it to the child.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed while looking for a free port");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t length = sizeof(address);
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  ::close(fd);
  return bound ? ntohs(address.sin_port) : -1;
}

// The first port of the kernel's ephemeral range (32768 if unreadable).
int ephemeralLow() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (range >> low >> high && low > 2048) return low;
  return 32768;
}

}  // namespace

int freeLoopbackPort() {
  // Below the ephemeral range: the kernel hands ports from that range to
  // every connecting socket (and to bind(port 0)), so a port found there may
  // be taken by some test's outgoing connection before the test listens on
  // it. Below it, only another test drawing the same random port could.
  const int low = ephemeralLow();
  std::random_device seed;
  std::mt19937 random(seed());
  std::uniform_int_distribution<int> draw(low / 2, low - 1);
  for (int attempt = 0; attempt < 64; ++attempt)
    if (const int port = tryBind(draw(random)); port > 0) return port;
  if (const int port = tryBind(0); port > 0) return port;
  throw std::runtime_error("cannot find a free port on 127.0.0.1");
}

}  // namespace hora::test_support
