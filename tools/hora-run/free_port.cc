#include "free_port.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "posix_io.h"

namespace hora::launcher {

int pick_free_port() {
  UniqueFd socket_fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket_fd.valid()) throw_errno("cannot create a socket to pick a free MASTER_PORT");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  if (::bind(socket_fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    throw_errno("cannot bind a socket to pick a free MASTER_PORT");
  }
  socklen_t length = sizeof(address);
  if (::getsockname(socket_fd.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw_errno("cannot read back the port picked for MASTER_PORT");
  }
  return ntohs(address.sin_port);
}

}  // namespace hora::launcher
