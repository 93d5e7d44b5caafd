#include "transport/stream_connection.h"

#include <algorithm>
#include <cstring>

namespace hora::transport {

// Bytes handed to one send()/recv() call. Large enough to amortise the
// syscall, small enough that a send and a receive on one thread take turns
// often (neither peer's socket buffer fills while we are busy with the other).
constexpr std::size_t kMaxBytesPerCall = 1 << 20;

StreamSendConnection::StreamSendConnection(std::unique_ptr<ByteStream> stream, std::string peerName)
    : stream_(std::move(stream)), mayHold_(stream_->mayHold()), peer_(std::move(peerName)) {}

bool StreamSendConnection::progress() {
  bool moved = false;
  if (const std::size_t held = mayHold_ ? stream_->heldBytes() : 0; held > 0) {
    stream_->trySend(nullptr, 0);  // completions: held bytes become complete
    moved = stream_->heldBytes() < held;
  }
  for (;;) {
    // A stamp goes when the stream reaches its operation's start, ahead of
    // the first bytes posted there, or alone.
    if (frameLeft_ == 0 && stamps_.frontFrom() <= queue_.completed() &&
        (stamps_.front().alone || !queue_.empty())) {
      frame_.stamp = stamps_.front().stamp;
      frameLeft_ = sizeof(frame_);
      stamps_.pop_front();
    }
    if (frameLeft_ > 0) {
      const char* rest = reinterpret_cast<const char*>(&frame_) + (sizeof(frame_) - frameLeft_);
      // The operation's first bytes in the same call, unless another
      // stamp comes first.
      const bool data = !queue_.empty() && stamps_.frontFrom() > queue_.completed();
      const std::size_t dataBytes = data ? std::min(queue_.frontBytes(), kMaxBytesPerCall) : 0;
      std::size_t n = stream_->trySendTwo(rest, frameLeft_, data ? queue_.frontData() : nullptr, dataBytes);
      if (n == 0) return moved;
      moved = true;
      const std::size_t ofFrame = std::min(n, frameLeft_);
      frameLeft_ -= ofFrame;
      if (frameLeft_ == 0) --stampsOutstanding_;  // its frame is out
      if (n > ofFrame) queue_.advance(n - ofFrame);
      continue;
    }
    if (queue_.empty() || stamps_.frontFrom() <= queue_.completed()) return moved;
    std::size_t bytes = std::min(queue_.frontBytes(), kMaxBytesPerCall);
    std::size_t n = stream_->trySend(queue_.frontData(), bytes);
    if (n == 0) return moved;
    moved = true;
    queue_.advance(n);
  }
}

void StreamSendConnection::beginMessage(protocols::Protocol /*protocol*/, const OpStamp* stamp) {
  if (stamp == nullptr) return;
  // The previous operation flushed its stamp (core/host_primitives.h).
  HORA_ENFORCE(stamps_.empty() || stamps_.back().alone || bytesFollow_,
               "an operation's stamp for ", peer_, " was never sent");
  stamps_.push_back({*stamp, queue_.posted(), false});
  ++stampsOutstanding_;
  bytesFollow_ = false;
}

void StreamSendConnection::flushStamp() {
  // Bytes posted carry the stamp; otherwise it goes alone.
  if (stamps_.empty() || stamps_.back().alone || (bytesFollow_ && !queue_.empty())) return;
  stamps_.back().alone = true;
  progress();
}

// Room for the first bytes of a small operation, read with its frame.
constexpr std::size_t kLookaheadBytes = 4096;

StreamRecvConnection::StreamRecvConnection(std::unique_ptr<ByteStream> stream, std::string peerName)
    : stream_(std::move(stream)), peer_(std::move(peerName)), lookahead_(kLookaheadBytes) {}

std::size_t StreamRecvConnection::take(char* data, std::size_t bytes) {
  if (lookStart_ == lookEnd_) return stream_->tryRecv(data, bytes);
  const std::size_t n = std::min(bytes, lookEnd_ - lookStart_);
  std::memcpy(data, lookahead_.data() + lookStart_, n);
  lookStart_ += n;
  if (lookStart_ == lookEnd_) lookStart_ = lookEnd_ = 0;
  return n;
}

bool StreamRecvConnection::readFrame() {
  char* into = reinterpret_cast<char*>(&frame_) + frameRead_;
  const std::size_t want = sizeof(frame_) - frameRead_;
  std::size_t n;
  if (lookStart_ < lookEnd_) {
    n = take(into, want);
  } else {
    // The frame, and into the lookahead whatever came after it.
    n = stream_->tryRecvTwo(into, want, lookahead_.data(), lookahead_.size());
    if (n > want) {
      lookEnd_ = n - want;
      n = want;
    }
  }
  if (n == 0) return false;
  frameRead_ += n;
  if (frameRead_ < sizeof(frame_)) return true;
  frameRead_ = 0;
  const OpStamp expected = expected_.front().stamp;
  if (frame_.marker != StampFrame::kMarker) throw StampMismatch(peer_, expected, std::nullopt);
  if (!stampsAgree(expected, frame_.stamp)) throw StampMismatch(peer_, expected, frame_.stamp);
  expected_.pop_front();
  --stampsOutstanding_;
  return true;
}

bool StreamRecvConnection::progress() {
  bool moved = false;
  for (;;) {
    // Not a byte of an operation into the caller's memory before its stamp
    // has been read and checked.
    if (stampDue()) {
      if (!readFrame()) return moved;
      moved = true;
      continue;
    }
    if (queue_.empty()) return moved;
    std::size_t bytes = std::min(queue_.frontBytes(), kMaxBytesPerCall);
    std::size_t n = take(queue_.frontData(), bytes);
    if (n == 0) return moved;
    moved = true;
    queue_.advance(n);
  }
}

void StreamRecvConnection::beginMessage(protocols::Protocol /*protocol*/, const OpStamp* stamp) {
  if (stamp == nullptr) return;
  expected_.push_back({*stamp, queue_.posted()});
  ++stampsOutstanding_;
}

bool StreamRecvConnection::stampChecked() {
  progress();
  return expected_.empty();
}

}  // namespace hora::transport
