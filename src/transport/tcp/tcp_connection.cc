#include "transport/tcp/tcp_connection.h"

namespace hora::transport {

// Bytes handed to one send()/recv() call. Large enough to amortise the
// syscall, small enough that a send and a receive on one thread take turns
// often (neither peer's socket buffer fills while we are busy with the other).
constexpr std::size_t kMaxBytesPerCall = 1 << 20;

TcpSendConnection::TcpSendConnection(Socket socket, std::string peerName)
    : socket_(std::move(socket)), peer_(std::move(peerName)) {
  socket_.setNoDelay();
}

void TcpSendConnection::post(const void* data, std::size_t bytes) {
  if (bytes == 0) return;
  queue_.push_back({static_cast<const char*>(data), bytes});
  posted_ += bytes;
}

bool TcpSendConnection::progress() {
  bool moved = false;
  while (!queue_.empty()) {
    Piece& piece = queue_.front();
    std::size_t n = socket_.trySend(piece.data, std::min(piece.left, kMaxBytesPerCall), peer_);
    if (n == 0) break;
    moved = true;
    piece.data += n;
    piece.left -= n;
    completed_ += n;
    if (piece.left == 0) queue_.pop_front();
  }
  return moved;
}

pollfd TcpSendConnection::pollEntry() const {
  return {queue_.empty() ? -1 : socket_.fd(), POLLOUT, 0};
}

TcpRecvConnection::TcpRecvConnection(Socket socket, std::string peerName)
    : socket_(std::move(socket)), peer_(std::move(peerName)) {}

void TcpRecvConnection::post(void* data, std::size_t bytes) {
  if (bytes == 0) return;
  queue_.push_back({static_cast<char*>(data), bytes});
  posted_ += bytes;
}

bool TcpRecvConnection::progress() {
  bool moved = false;
  while (!queue_.empty()) {
    Piece& piece = queue_.front();
    std::size_t n = socket_.tryRecv(piece.data, std::min(piece.left, kMaxBytesPerCall), peer_);
    if (n == 0) break;
    moved = true;
    piece.data += n;
    piece.left -= n;
    completed_ += n;
    if (piece.left == 0) queue_.pop_front();
  }
  return moved;
}

pollfd TcpRecvConnection::pollEntry() const {
  return {queue_.empty() ? -1 : socket_.fd(), POLLIN, 0};
}

}  // namespace hora::transport
