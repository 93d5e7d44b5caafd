// A byte stream (byte_stream.h: a TCP socket, or the RDMA credit protocol)
// as a hora connection: posted buffers go out (or come in) in order without
// blocking, so one thread can drive a send and a receive at once and overlap
// the network with its own reductions.
//
// An operation's stamp (op_stamp.h) is a small frame in the stream at the
// operation's start, ahead of its first bytes (in the same send() as they
// when they are posted by then). The receiver reads the frame into a buffer
// of its own and checks it before it receives a byte of the operation into
// the caller's memory; what came with the frame in the same recv() (the
// operation's first bytes, usually) waits in a lookahead buffer, so that
// the frame costs no system call of its own. The frame is not counted in
// the connection's byte counters: those count the executor's bytes only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "transport/byte_stream.h"
#include "transport/connection.h"
#include "transport/posted_queue.h"
#include "transport/stamp_queue.h"

namespace hora::transport {

// On the wire: a marker (so that data read where a frame should be is
// reported as such), then the stamp.
struct StampFrame {
  static constexpr std::uint64_t kMarker = 0x686f72612d6f7021ull;  // "hora-op!"
  std::uint64_t marker = kMarker;
  OpStamp stamp;
};

class StreamSendConnection final : public SendConnection {
 public:
  StreamSendConnection(std::unique_ptr<ByteStream> stream, std::string peerName);
  void post(const void* data, std::size_t bytes) override {
    if (bytes > 0) bytesFollow_ = true;
    queue_.post(static_cast<const char*>(data), bytes);
  }
  std::uint64_t postedBytes() const override { return queue_.posted(); }
  // Bytes the stream still reads from our buffers (sent without a copy)
  // are not complete: the last heldBytes() it took, counted as if all were
  // data, so that this errs low, never high.
  std::uint64_t completedBytes() const override {
    if (!mayHold_) return queue_.completed();
    const std::size_t held = stream_->heldBytes();
    if (held == 0) return queue_.completed();
    const std::uint64_t done = queue_.completed() - std::min<std::uint64_t>(held, queue_.completed());
    completedFloor_ = std::max(completedFloor_, done);
    return completedFloor_;
  }
  bool progress() override;
  pollfd pollEntry() const override {
    if (queue_.empty() && !stampPending() && (!mayHold_ || stream_->heldBytes() == 0)) return {-1, POLLOUT, 0};
    return stream_->pollEntry(/*sending=*/true);
  }
  const std::string& peerName() const override { return peer_; }
  void checkAlive() override { stream_->checkAlive(); }
  void releaseDeregistered() override {
    if (mayHold_) stream_->releaseDeregistered();
  }
  bool idle() const override { return completedBytes() == postedBytes() && !stampPending(); }
  // One way for every byte: only the stamp matters here.
  void beginMessage(protocols::Protocol protocol, const OpStamp* stamp) override;
  void flushStamp() override;

 private:
  std::unique_ptr<ByteStream> stream_;
  bool mayHold_;  // stream_->mayHold(), asked once: the TCP path makes no call for it
  std::string peer_;
  PostedQueue<const char*> queue_;
  // Stamps of operations begun here, in stream order, until their frame is
  // built; only the newest may still wait for bytes. Then the frame being
  // sent and how much of it is left.
  StampQueue<OutgoingStamp> stamps_;
  bool bytesFollow_ = false;  // bytes of the newest stamp's operation are posted
  StampFrame frame_;
  std::size_t frameLeft_ = 0;
  mutable std::uint64_t completedFloor_ = 0;  // completedBytes() never goes back
};

class StreamRecvConnection final : public RecvConnection {
 public:
  StreamRecvConnection(std::unique_ptr<ByteStream> stream, std::string peerName);
  void post(void* data, std::size_t bytes) override { queue_.post(static_cast<char*>(data), bytes); }
  std::uint64_t postedBytes() const override { return queue_.posted(); }
  std::uint64_t completedBytes() const override { return queue_.completed(); }
  bool progress() override;
  pollfd pollEntry() const override {
    if (queue_.empty() && !stampDue()) return {-1, POLLIN, 0};
    return stream_->pollEntry(/*sending=*/false);
  }
  const std::string& peerName() const override { return peer_; }
  void checkAlive() override { stream_->checkAlive(); }
  bool idle() const override { return completedBytes() == postedBytes() && !stampDue(); }
  void beginMessage(protocols::Protocol protocol, const OpStamp* stamp) override;
  bool stampChecked() override;

 private:
  bool stampDue() const { return expected_.frontFrom() <= queue_.completed(); }
  // Reads what has come of the due stamp's frame; checks it once whole.
  // True if any byte moved.
  bool readFrame();
  // Up to `bytes` of the stream into `data`: the lookahead's first.
  std::size_t take(char* data, std::size_t bytes);

  std::unique_ptr<ByteStream> stream_;
  std::string peer_;
  PostedQueue<char*> queue_;
  struct ExpectedStamp {
    OpStamp stamp;
    std::uint64_t from;
  };
  StampQueue<ExpectedStamp> expected_;  // in stream order, until checked
  StampFrame frame_;
  std::size_t frameRead_ = 0;
  // Stream bytes read with a frame, not yet taken: [lookStart_, lookEnd_).
  std::vector<char> lookahead_;
  std::size_t lookStart_ = 0, lookEnd_ = 0;
};

}  // namespace hora::transport
