#include "comm_world.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "in_process_group.h"

namespace hora::ddp::testing {

int freeLocalPort() {
  const int socketFd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (socketFd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // the kernel picks
  socklen_t length = sizeof(address);
  if (::bind(socketFd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(socketFd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(socketFd);
    throw std::runtime_error("cannot find a free port on 127.0.0.1");
  }
  ::close(socketFd);
  return ntohs(address.sin_port);
}

void runWithCommunicators(int size, std::chrono::milliseconds timeout,
                          const std::function<void(Communicator&)>& body) {
  const std::string initMethod = "tcp://127.0.0.1:" + std::to_string(freeLocalPort());
  runRanks(size, [&](int rank) {
    auto communicator =
        Communicator::fromInitMethod(initMethod, rank, size, CommunicatorOptions{timeout});
    body(*communicator);
  });
}

}  // namespace hora::ddp::testing
