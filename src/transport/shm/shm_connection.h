// Shared memory as a hora connection: the sender owns a FIFO segment
// (shm_fifo.h) that the receiver maps. Posted buffers are copied into the FIFO
// by the sender's progress() and out of it by the receiver's. The TCP socket
// that set the pair up stays open as a lifeline: it has no traffic, so when
// it becomes readable the peer has exited or aborted.
#pragma once

#include <memory>

#include "base/socket.h"
#include "transport/connection.h"
#include "transport/posted_queue.h"
#include "transport/shm/shm_fifo.h"
#include "transport/shm/shm_segment.h"

namespace hora::transport {

// The handshake over `lifeline` (already introduced) never waits on the
// peer's progress, so two ranks that both connect before they accept cannot
// deadlock: the sender creates the segment and sends its pid/fd at once; the
// receiver maps it and sends one byte back, which the sender reads later
// (then closes its descriptor).
class ShmSendConnection;
class ShmRecvConnection;
std::unique_ptr<ShmSendConnection> connectShmSender(Socket lifeline, std::string peerName,
                                                    std::size_t fifoBytes, const Deadline& deadline,
                                                    const std::atomic<bool>* abort);
std::unique_ptr<ShmRecvConnection> acceptShmReceiver(Socket lifeline, std::string peerName,
                                                     const Deadline& deadline,
                                                     const std::atomic<bool>* abort);

class ShmSendConnection final : public SendConnection {
 public:
  ShmSendConnection(ShmSegment segment, Socket lifeline, std::string peerName);
  void post(const void* data, std::size_t bytes) override {
    queue_.post(static_cast<const char*>(data), bytes);
  }
  std::uint64_t postedBytes() const override { return queue_.posted(); }
  std::uint64_t completedBytes() const override { return queue_.completed(); }
  bool progress() override;
  pollfd pollEntry() const override { return {queue_.empty() ? -1 : lifeline_.fd(), POLLIN, 0}; }
  int sleepSliceMs() const override { return 1; }
  void checkAlive() override;
  const std::string& peerName() const override { return peer_; }
  Socket& socket() { return lifeline_; }

 private:
  // Reads the receiver's acknowledgement once it is there (non-blocking).
  void collectAck();

  ShmSegment segment_;
  ShmFifo fifo_;
  Socket lifeline_;
  std::string peer_;
  PostedQueue<const char*> queue_;
  bool awaitingAck_ = true;
};

class ShmRecvConnection final : public RecvConnection {
 public:
  ShmRecvConnection(ShmSegment segment, Socket lifeline, std::string peerName);
  void post(void* data, std::size_t bytes) override { queue_.post(static_cast<char*>(data), bytes); }
  std::uint64_t postedBytes() const override { return queue_.posted(); }
  std::uint64_t completedBytes() const override { return queue_.completed(); }
  bool progress() override;
  pollfd pollEntry() const override { return {queue_.empty() ? -1 : lifeline_.fd(), POLLIN, 0}; }
  int sleepSliceMs() const override { return 1; }
  void checkAlive() override;
  const std::string& peerName() const override { return peer_; }
  Socket& socket() { return lifeline_; }

 private:
  ShmSegment segment_;
  ShmFifo fifo_;
  Socket lifeline_;
  std::string peer_;
  PostedQueue<char*> queue_;
};

}  // namespace hora::transport
