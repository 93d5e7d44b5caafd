// A TCP stream as a hora connection: posted buffers go out (or come in) in
// order with non-blocking send()/recv(), so one thread can drive a send and a
// receive at once and overlap the network with its own reductions.
#pragma once

#include "base/socket.h"
#include "transport/connection.h"
#include "transport/posted_queue.h"

namespace hora::transport {

class TcpSendConnection final : public SendConnection {
 public:
  TcpSendConnection(Socket socket, std::string peerName);
  void post(const void* data, std::size_t bytes) override {
    queue_.post(static_cast<const char*>(data), bytes);
  }
  std::uint64_t postedBytes() const override { return queue_.posted(); }
  std::uint64_t completedBytes() const override { return queue_.completed(); }
  bool progress() override;
  pollfd pollEntry() const override { return {queue_.empty() ? -1 : socket_.fd(), POLLOUT, 0}; }
  const std::string& peerName() const override { return peer_; }

 private:
  Socket socket_;
  std::string peer_;
  PostedQueue<const char*> queue_;
};

class TcpRecvConnection final : public RecvConnection {
 public:
  TcpRecvConnection(Socket socket, std::string peerName);
  void post(void* data, std::size_t bytes) override { queue_.post(static_cast<char*>(data), bytes); }
  std::uint64_t postedBytes() const override { return queue_.posted(); }
  std::uint64_t completedBytes() const override { return queue_.completed(); }
  bool progress() override;
  pollfd pollEntry() const override { return {queue_.empty() ? -1 : socket_.fd(), POLLIN, 0}; }
  const std::string& peerName() const override { return peer_; }

 private:
  Socket socket_;
  std::string peer_;
  PostedQueue<char*> queue_;
};

}  // namespace hora::transport
