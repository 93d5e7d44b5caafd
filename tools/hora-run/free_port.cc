#include "free_port.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>
#include <random>

#include "posix_io.h"

namespace hora::launcher {

namespace {

// Whether a TCP socket can bind `port` on all interfaces right now; port 0
// asks the kernel for an ephemeral one. Returns the port bound, or 0.
int try_bind(int port) {
  UniqueFd socket_fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket_fd.valid()) throw_errno("cannot create a socket to pick a free MASTER_PORT");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(socket_fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) return 0;
  socklen_t length = sizeof(address);
  if (::getsockname(socket_fd.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw_errno("cannot read back the port picked for MASTER_PORT");
  }
  return ntohs(address.sin_port);
}

}  // namespace

PortRange ephemeral_port_range(const std::string& proc_file) {
  PortRange range;
  std::ifstream in(proc_file);
  int low = 0, high = 0;
  if (in >> low >> high && 0 < low && low <= high && high <= 65535) range = {low, high};
  return range;
}

int pick_free_port(const PortRange& ephemeral) {
  // Below the ephemeral range when there is room there, else above it.
  PortRange candidates{10000, ephemeral.low - 1};
  if (candidates.high - candidates.low < 1000) candidates = {ephemeral.high + 1, 65535};
  if (candidates.high - candidates.low >= 1000) {
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> pick(candidates.low, candidates.high);
    for (int attempt = 0; attempt < 64; ++attempt) {
      if (int port = try_bind(pick(random))) return port;
    }
  }
  if (int port = try_bind(0)) return port;
  throw_errno("cannot bind a socket to pick a free MASTER_PORT");
}

}  // namespace hora::launcher
