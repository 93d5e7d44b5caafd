// Shared memory as a hora connection. The sender owns a FIFO segment
// (shm_fifo.h) that the receiver maps; the FIFO carries the byte stream.
// Posted buffers are copied in by the sender and out by the receiver, or,
// in place, the executor reduces straight out of the FIFO and into the next
// rank's FIFO (connection.h).
//
// The sender's bytes count as sent once they are in the FIFO and the
// receiver has mapped it: from then on no buffer of the caller's is
// involved, and the data survives the sender's exit.
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

// The largest alignment alignStream() accepts.
inline constexpr std::size_t kMaxStreamAlignment = 64;

// A waiter sleeps this long at a time (data in shared memory wakes no
// descriptor): short, because a rank that went to sleep while its peer's
// CPU was briefly taken away should not make the next step wait long.
inline constexpr std::chrono::microseconds kShmSleepSlice{50};

struct ShmOptions {
  // The FIFO of each direction (rounded up to whole pages).
  std::size_t fifoBytes = 4 << 20;
};

class ShmSendConnection;
class ShmRecvConnection;

// The handshake over `lifeline` (already introduced) never waits on the
// peer's progress, so two ranks that both connect before they accept cannot
// deadlock: the sender creates the segment and sends its pid/fd at once; the
// receiver maps it, tests whether it may read the sender's memory
// (process_vm_readv: same user, no ptrace restriction) and answers with one
// byte that the sender reads later (then closes its fd).
std::unique_ptr<ShmSendConnection> connectShmSender(Socket lifeline, std::string peerName,
                                                    const ShmOptions& options,
                                                    const Deadline& deadline,
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
  // A posted buffer is free again once copied into the FIFO, provided the
  // receiver has mapped it: from then on the bytes outlive this process.
  std::uint64_t completedBytes() const override { return awaitingAck_ ? 0 : queue_.completed(); }
  bool progress() override;
  pollfd pollEntry() const override;
  std::chrono::microseconds sleepSlice() const override { return kShmSleepSlice; }
  void checkAlive() override;
  const std::string& peerName() const override { return peer_; }

  // Busy until the receiver has taken every byte (a single-copy sender waits
  // for that), and while an in-place sender waits for room.
  bool idle() const override {
    return completedBytes() == postedBytes() && acknowledgedBytes() >= postedBytes() && !wantsRoom_;
  }
  bool sendsInPlace() const override { return true; }
  void alignStream(std::size_t alignment) override;
  std::span<char> writable(std::size_t maxBytes) override;
  void commitWritten(std::size_t bytes) override;

  PeerMemoryAccess peerMemoryAccess() override;
  std::uint64_t acknowledgedBytes() const override {
    return fifo_.header().read.load(std::memory_order_acquire);
  }

 private:
  // Reads the receiver's answer once it is there (non-blocking).
  void collectAck();

  ShmSegment segment_;
  ShmFifo fifo_;
  Socket lifeline_;
  std::string peer_;
  PostedQueue<const char*> queue_;  // "moved" = in the FIFO
  bool awaitingAck_ = true;
  bool peerReadsUs_ = false;  // from the receiver's answer
  bool wantsRoom_ = false;  // writable() found less room than asked for
};

class ShmRecvConnection final : public RecvConnection {
 public:
  // readsSender: process_vm_readv of the sender (pid senderPid) works, or
  // the sender is this process.
  ShmRecvConnection(ShmSegment segment, Socket lifeline, std::string peerName, pid_t senderPid,
                    bool readsSender);
  void post(void* data, std::size_t bytes) override { queue_.post(static_cast<char*>(data), bytes); }
  std::uint64_t postedBytes() const override { return queue_.posted(); }
  std::uint64_t completedBytes() const override { return queue_.completed(); }
  bool progress() override;
  pollfd pollEntry() const override { return {queue_.empty() ? -1 : lifeline_.fd(), POLLIN, 0}; }
  std::chrono::microseconds sleepSlice() const override { return kShmSleepSlice; }
  void checkAlive() override;
  const std::string& peerName() const override { return peer_; }

  bool receivesInPlace() const override { return true; }
  void alignStream(std::size_t alignment) override;
  void postInPlace(std::size_t bytes) override { queue_.postInPlace(bytes); }
  std::span<const char> readable() override;
  void consumeRead(std::size_t bytes) override;

  bool readsPeerMemory() const override { return readsSender_; }
  void readPeerMemory(void* dst, std::uint64_t address, std::size_t bytes) override;

 private:
  ShmSegment segment_;
  ShmFifo fifo_;
  Socket lifeline_;
  std::string peer_;
  PostedQueue<char*> queue_;
  pid_t senderPid_;
  bool senderIsUs_;
  bool readsSender_;
  char padding_[kMaxStreamAlignment];  // where alignment padding is received
};

}  // namespace hora::transport
