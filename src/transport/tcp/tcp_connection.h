// A TCP stream as a hora connection: posted buffers go out (or come in) in
// order with non-blocking send()/recv(), so one thread can drive a send and a
// receive at once and overlap the network with its own reductions.
#pragma once

#include <deque>

#include "base/socket.h"
#include "transport/connection.h"

namespace hora::transport {

class TcpSendConnection final : public SendConnection {
 public:
  TcpSendConnection(Socket socket, std::string peerName);
  void post(const void* data, std::size_t bytes) override;
  std::uint64_t postedBytes() const override { return posted_; }
  std::uint64_t completedBytes() const override { return completed_; }
  bool progress() override;
  pollfd pollEntry() const override;
  const std::string& peerName() const override { return peer_; }
  Socket& socket() { return socket_; }

 private:
  struct Piece {
    const char* data;
    std::size_t left;
  };
  Socket socket_;
  std::string peer_;
  std::deque<Piece> queue_;
  std::uint64_t posted_ = 0;
  std::uint64_t completed_ = 0;
};

class TcpRecvConnection final : public RecvConnection {
 public:
  TcpRecvConnection(Socket socket, std::string peerName);
  void post(void* data, std::size_t bytes) override;
  std::uint64_t postedBytes() const override { return posted_; }
  std::uint64_t completedBytes() const override { return completed_; }
  bool progress() override;
  pollfd pollEntry() const override;
  const std::string& peerName() const override { return peer_; }
  Socket& socket() { return socket_; }

 private:
  struct Piece {
    char* data;
    std::size_t left;
  };
  Socket socket_;
  std::string peer_;
  std::deque<Piece> queue_;
  std::uint64_t posted_ = 0;
  std::uint64_t completed_ = 0;
};

}  // namespace hora::transport
