#include "transport/proxy/fifo_relay.h"

#include "base/error.h"

namespace hora::transport::proxy {

using protocols::kSizeMask;
using protocols::kStampCheckMask;
using protocols::kStampCheckShift;
using protocols::kStamped;
using protocols::kStampWords;

// ---------------------------------------------------------------- sending

FifoSendRelay::FifoSendRelay(const std::vector<protocols::FifoHandle>& fifos, SendConnection& connection)
    : connection_(connection) {
  HORA_ENFORCE(!fifos.empty(), "a relay of no FIFOs");
  for (const protocols::FifoHandle& fifo : fifos) fifos_.emplace_back(fifo);
  ahead_.assign(fifos.size(), 0);
}

bool FifoSendRelay::progress() {
  bool moved = connection_.progress();
  // Slots whose frames have gone go back to their kernels, oldest first:
  // the order they were posted in, which is each channel's own order.
  const std::uint64_t sent = connection_.completedBytes();
  while (!inFlight_.empty() && inFlight_.front().end <= sent) {
    const std::uint64_t channel = inFlight_.front().header.channel;
    if (channel != kEndOfStream) {
      fifos_[channel].release();
      --ahead_[channel];
    }
    inFlight_.pop_front();
    moved = true;
  }
  // Every slot published since, channel after channel (starting from a
  // different one each time, so none waits behind another's stream).
  const std::size_t channels = fifos_.size();
  bool posted = false;
  for (std::size_t i = 0; i < channels; ++i) {
    const std::size_t channel = (nextChannel_ + i) % channels;
    protocols::SimplePiece piece{};
    while (fifos_[channel].tryPeek(ahead_[channel], &piece)) {
      Sent& frame = inFlight_.emplace_back(Sent{{protocols::sizeWordOf(piece), channel}, 0});
      connection_.post(&frame.header, sizeof(FrameHeader));
      // The board entry and the bytes stay as they are until the slot is
      // given back, so they are sent from the FIFO itself.
      if (piece.stamped) connection_.post(piece.stamp, kStampWords * sizeof(std::uint64_t));
      if (piece.bytes > 0) connection_.post(piece.data, piece.bytes);
      frame.end = connection_.postedBytes();
      ++ahead_[channel];
      posted = true;
    }
  }
  nextChannel_ = (nextChannel_ + 1) % channels;
  if (posted) connection_.progress();
  return moved || posted;
}

bool FifoSendRelay::drained() {
  if (!inFlight_.empty()) return false;
  protocols::SimplePiece piece{};
  for (std::size_t channel = 0; channel < fifos_.size(); ++channel)
    if (fifos_[channel].tryPeek(ahead_[channel], &piece)) return false;
  return true;
}

void FifoSendRelay::sendEnd() {
  if (endPosted_) return;
  endPosted_ = true;
  Sent& frame = inFlight_.emplace_back(Sent{{0, kEndOfStream}, 0});
  connection_.post(&frame.header, sizeof(FrameHeader));
  frame.end = connection_.postedBytes();
  connection_.progress();
}

// -------------------------------------------------------------- receiving

FifoRecvRelay::FifoRecvRelay(const std::vector<protocols::FifoHandle>& fifos, RecvConnection& connection)
    : connection_(connection) {
  HORA_ENFORCE(!fifos.empty(), "a relay of no FIFOs");
  for (const protocols::FifoHandle& fifo : fifos) fifos_.emplace_back(fifo);
}

bool FifoRecvRelay::received(void* into, std::size_t bytes) {
  if (bytes == 0) return true;
  if (!posted_) {
    connection_.post(into, bytes);
    target_ = connection_.postedBytes();
    posted_ = true;
  }
  connection_.progress();
  if (connection_.completedBytes() < target_) return false;
  posted_ = false;
  return true;
}

void FifoRecvRelay::checkAlive() {
  if (ended_) return;
  try {
    connection_.checkAlive();
  } catch (const Error&) {
    // A peer that ended its stream may close right after: take what came.
    progress();
    if (!ended_) throw;
  }
}

bool FifoRecvRelay::progress() {
  bool moved = false;
  while (!ended_) {
    switch (stage_) {
      case Stage::Header: {
        if (!received(&header_, sizeof(FrameHeader))) return moved;
        const std::uint64_t word = header_.sizeWord;
        if (header_.channel == kEndOfStream && word == 0) {
          ended_ = true;
          return true;
        }
        const bool stamped = (word & kStamped) != 0;
        const bool strayCheck = !stamped && (word >> kStampCheckShift & kStampCheckMask) != 0;
        if (header_.channel >= fifos_.size() || (word & kSizeMask) > fifos_[header_.channel].slotBytes() || strayCheck)
          fail(ErrorKind::Remote, "the device network relay from ", connection_.peerName(),
               " sent a frame that is none of its own (channel ", header_.channel, " of ", fifos_.size(),
               ", size word ", word, ")");
        stage_ = stamped ? Stage::Stamp : Stage::Data;
        moved = true;
        break;
      }
      case Stage::Stamp:
        if (!received(stamp_, sizeof(stamp_))) return moved;
        stage_ = Stage::Data;
        moved = true;
        break;
      case Stage::Data: {
        Sender& fifo = fifos_[header_.channel];
        if (slot_ == nullptr && !fifo.tryRoom(&slot_)) return moved;  // the kernel has not freed a slot yet
        if (!received(slot_, header_.sizeWord & kSizeMask)) return moved;
        fifo.publishWord(header_.sizeWord, (header_.sizeWord & kStamped) != 0 ? stamp_ : nullptr);
        slot_ = nullptr;
        stage_ = Stage::Header;
        moved = true;
        break;
      }
    }
  }
  return moved;
}

}  // namespace hora::transport::proxy
