#include "transport/tcp/tcp_connection.h"

#include <algorithm>

namespace hora::transport {

// Bytes handed to one send()/recv() call. Large enough to amortise the
// syscall, small enough that a send and a receive on one thread take turns
// often (neither peer's socket buffer fills while we are busy with the other).
constexpr std::size_t kMaxBytesPerCall = 1 << 20;

TcpSendConnection::TcpSendConnection(Socket socket, std::string peerName)
    : socket_(std::move(socket)), peer_(std::move(peerName)) {
  socket_.setNoDelay();
}

bool TcpSendConnection::progress() {
  return queue_.drain([&](const char* data, std::size_t bytes) {
    return socket_.trySend(data, std::min(bytes, kMaxBytesPerCall), peer_);
  });
}

TcpRecvConnection::TcpRecvConnection(Socket socket, std::string peerName)
    : socket_(std::move(socket)), peer_(std::move(peerName)) {}

bool TcpRecvConnection::progress() {
  return queue_.drain([&](char* data, std::size_t bytes) {
    return socket_.tryRecv(data, std::min(bytes, kMaxBytesPerCall), peer_);
  });
}

}  // namespace hora::transport
