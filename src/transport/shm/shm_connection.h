// Shared memory as a hora connection. The sender owns a FIFO segment
// (shm_fifo.h) that the receiver maps; the FIFO carries records:
//
//   inline record: {length, 0} then `length` payload bytes, copied in by the
//                  sender and out by the receiver (small messages);
//   pull record:   {length, address}: the receiver copies the bytes straight
//                  out of the sender's memory with process_vm_readv (one copy
//                  instead of two; large messages).
//
// The sender's buffers count as sent only when the receiver has consumed them
// (the `consumed` counter), because a pull reads them in place.
//
// The TCP socket that set the pair up stays open as a lifeline: it has no
// traffic, so when it becomes readable the peer has exited or aborted.
#pragma once

#include <sys/types.h>

#include <memory>

#include "base/socket.h"
#include "transport/connection.h"
#include "transport/posted_queue.h"
#include "transport/shm/shm_fifo.h"
#include "transport/shm/shm_segment.h"

namespace hora::transport {

struct ShmOptions {
  std::size_t fifoBytes = 4 << 20;
  // Messages of at least this many bytes are pulled (0: never pull). Off by
  // default: on the virtual machines measured, process_vm_readv (which pins
  // the sender's pages on every call) lost to two plain copies through the
  // FIFO by 1.5-2x (docs/performance.md).
  std::size_t pullMinBytes = 0;
};

class ShmSendConnection;
class ShmRecvConnection;

// The handshake over `lifeline` (already introduced) never waits on the
// peer's progress, so two ranks that both connect before they accept cannot
// deadlock: the sender creates the segment and sends its pid/fd at once; the
// receiver maps it, checks whether it may read the sender's memory, and
// answers with one byte that the sender reads later (then closes its fd).
std::unique_ptr<ShmSendConnection> connectShmSender(Socket lifeline, std::string peerName,
                                                    const ShmOptions& options,
                                                    const Deadline& deadline,
                                                    const std::atomic<bool>* abort);
std::unique_ptr<ShmRecvConnection> acceptShmReceiver(Socket lifeline, std::string peerName,
                                                     const Deadline& deadline,
                                                     const std::atomic<bool>* abort);

class ShmSendConnection final : public SendConnection {
 public:
  ShmSendConnection(ShmSegment segment, Socket lifeline, std::string peerName,
                    const ShmOptions& options);
  void post(const void* data, std::size_t bytes) override {
    queue_.post(static_cast<const char*>(data), bytes);
  }
  std::uint64_t postedBytes() const override { return queue_.posted(); }
  std::uint64_t completedBytes() const override {
    return fifo_.header().consumed.load(std::memory_order_acquire);
  }
  bool progress() override;
  pollfd pollEntry() const override;
  int sleepSliceMs() const override { return 1; }
  void checkAlive() override;
  const std::string& peerName() const override { return peer_; }

 private:
  // Reads the receiver's answer once it is there (non-blocking).
  void collectAck();

  ShmSegment segment_;
  ShmFifo fifo_;
  Socket lifeline_;
  std::string peer_;
  ShmOptions options_;
  PostedQueue<const char*> queue_;  // "moved" = described in the FIFO
  std::size_t inlineLeft_ = 0;      // payload still owed to the current inline record
  bool awaitingAck_ = true;
  bool pullAllowed_ = false;        // the receiver may read our memory
};

class ShmRecvConnection final : public RecvConnection {
 public:
  ShmRecvConnection(ShmSegment segment, Socket lifeline, std::string peerName, pid_t senderPid);
  void post(void* data, std::size_t bytes) override { queue_.post(static_cast<char*>(data), bytes); }
  std::uint64_t postedBytes() const override { return queue_.posted(); }
  std::uint64_t completedBytes() const override { return queue_.completed(); }
  bool progress() override;
  pollfd pollEntry() const override { return {queue_.empty() ? -1 : lifeline_.fd(), POLLIN, 0}; }
  int sleepSliceMs() const override { return 1; }
  void checkAlive() override;
  const std::string& peerName() const override { return peer_; }

 private:
  void pull(char* dst, std::uint64_t address, std::size_t bytes);

  ShmSegment segment_;
  ShmFifo fifo_;
  Socket lifeline_;
  std::string peer_;
  pid_t senderPid_;
  bool senderIsUs_;
  PostedQueue<char*> queue_;
  std::uint64_t recordLeft_ = 0;
  std::uint64_t recordAddress_ = 0;  // 0: inline
};

}  // namespace hora::transport
