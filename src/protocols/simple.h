// The Simple protocol: whole slots handed over by two counters.
//
// The sender fills a slot, stores how many bytes it holds in sizes[slot],
// then advances head; the receiver waits for head to pass its position,
// reads the slot, then advances tail. head counts slots published and tail
// slots released, both only ever growing; slot k of the stream lives at
// k % slotCount. Up to slotCount slots are in flight, so the sender can
// fill the next ones while the receiver still reads the first.
//
//   sender:   waitRoom(&slot)   head - tail < slotCount   (acquire tail)
//             ...fill the slot...
//             publish(bytes)    sizes[k] = bytes; head = k + 1 (release)
//   receiver: waitData(&piece)  head > tail               (acquire head)
//             ...read the slot...
//             release()         tail = k + 1 (release)
//
// Stamps: a slot that begins an operation may carry the operation's stamp
// (kStampWords words; the executor's agreement check, core/agreement.h).
// Its size word then holds kStamped and a 30-bit check of the stamp (made
// by the caller, transport/op_stamp.h), which the receiver compares with
// the check of the stamp it expects: no line is added to the handover, the
// size word is loaded anyway. The full stamp goes to the stamps board, in
// the slot's own entry; a receiver reads it only to word a mismatch. It is
// intact while the slot is unreleased, as the slot's bytes are.
//
// Why these orderings suffice: the release of head is after the slot's bytes
// and its size (and stamp) were written, and the receiver reads them only after its
// acquire of head saw that value, so it reads what was written. In the other
// direction the receiver's reads of slot k come before its release of tail,
// and the sender writes slot k again (as slot k + slotCount) only after its
// acquire of tail saw k + 1, so it cannot overwrite bytes still being read.
// Nothing else is shared, so no other fence is needed.
//
// Each side keeps the other's counter as last loaded and loads it again only
// when that value blocks it: the counter's line was last written by the
// other side, so each load of it is a transfer between caches. A stale
// value only understates progress, and the acquire that loaded it already
// ordered everything up to it.
//
// Messages: send()/recv() move a message of any size, cut into pieces of at
// most slotBytes; sizes[] marks the message's last piece (kLastPiece), so a
// zero-byte message is one empty piece and the receiver needs no size in
// advance. One thread drives each side; in a kernel, the block fills or
// reads the slot between waitRoom and publish (or waitData and release),
// meeting at a barrier around the calls (device_ordering.h says why that is
// enough).
//
// A wait that ends in anything but Status::Ok leaves the stream where it
// was, but a send() or recv() that fails midway leaves a message half moved:
// the FIFO is then only good for tearing down.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/host_device.h"
#include "protocols/fifo_handle.h"
#include "protocols/spin_wait.h"
#include "protocols/status.h"

namespace hora::protocols {

// In sizes[]: set on the piece that ends a message; the low 32 bits are
// bytes (slotBytes is at most 1 GiB).
inline constexpr std::uint64_t kLastPiece = std::uint64_t{1} << 63;
// In sizes[]: the slot begins an operation; bits 32 to 61 hold stampCheck.
inline constexpr std::uint64_t kStamped = std::uint64_t{1} << 62;
inline constexpr int kStampCheckShift = 32;
inline constexpr std::uint64_t kStampCheckMask = (std::uint64_t{1} << 30) - 1;
inline constexpr std::uint64_t kSizeMask = (std::uint64_t{1} << 32) - 1;

struct SimplePiece {
  const char* data;
  std::uint64_t bytes;
  bool last;                   // the message's final piece
  bool stamped;                // the slot begins an operation
  std::uint64_t check;         // its check (kStampCheckMask bits)
  const std::uint64_t* stamp;  // its full stamp on the board (kStampWords)
};

// The size word a slot described as `piece` carries (its inverse).
HORA_HOST_DEVICE constexpr std::uint64_t sizeWordOf(const SimplePiece& piece) {
  return piece.bytes | (piece.last ? kLastPiece : 0) |
         (piece.stamped ? kStamped | (piece.check & kStampCheckMask) << kStampCheckShift : 0);
}

// index + 1 modulo count: where a slot index goes next. Kept instead of a
// counter's remainder, which costs a division (tens of cycles) per slot on
// the path of every message.
HORA_HOST_DEVICE constexpr std::uint64_t nextIndex(std::uint64_t index, std::uint64_t count) {
  return index + 1 == count ? 0 : index + 1;
}

template <class Ordering>
class SimpleSender {
 public:
  // Resumes the stream where the FIFO's head says (0 for a new FIFO).
  HORA_HOST_DEVICE explicit SimpleSender(const FifoHandle& fifo)
      : fifo_(fifo),
        head_(Ordering::loadRelaxed(fifo.head)),
        knownTail_(Ordering::loadAcquire(fifo.tail)),
        headSlot_(head_ % fifo.slotCount) {}

  // The most bytes a slot holds.
  HORA_HOST_DEVICE std::uint64_t slotBytes() const { return fifo_.slotBytes; }

  // Without waiting: whether a slot is free, and if so *slot as waitRoom
  // gives it. For callers that poll many FIFOs from one loop.
  HORA_HOST_DEVICE bool tryRoom(char** slot) {
    if (!hasRoom()) {
      knownTail_ = Ordering::loadAcquire(fifo_.tail);
      if (!hasRoom()) return false;
    }
    *slot = fifo_.slots + headSlot_ * fifo_.slotBytes;
    return true;
  }

  // Waits for a free slot; *slot is where to write up to slotBytes bytes.
  // `watch` as spinUntil's.
  template <class Watch = NoWatch>
  HORA_HOST_DEVICE Status waitRoom(char** slot, std::uint64_t deadline, Watch watch = Watch{}) {
    if (!hasRoom()) {
      const Status status = spinUntil<Ordering>(
          [&] {
            knownTail_ = Ordering::loadAcquire(fifo_.tail);
            return hasRoom();
          },
          fifo_.abortFlag, deadline, watch);
      if (status != Status::Ok) return status;
    }
    *slot = fifo_.slots + headSlot_ * fifo_.slotBytes;
    return Status::Ok;
  }

  // Hands the slot waitRoom returned to the receiver, holding `bytes` bytes
  // (at most slotBytes); `last` ends the message.
  HORA_HOST_DEVICE void publish(std::uint64_t bytes, bool last = true) {
    fifo_.sizes[headSlot_] = bytes | (last ? kLastPiece : 0);
    advanceHead();
  }

  // publish() of a slot that begins an operation: `stamp` (kStampWords
  // words) goes to the board, `check` (30 bits of it) with the size.
  HORA_HOST_DEVICE void publishStamped(std::uint64_t bytes, const std::uint64_t* stamp,
                                       std::uint64_t check) {
    publishWord(bytes | kLastPiece | kStamped | check << kStampCheckShift, stamp);
  }

  // publish() of a slot whose size word (and, when `stamp` is not null, its
  // board entry) is given whole, as another FIFO's slot carried them: what
  // a relay between two FIFOs (transport/proxy/fifo_relay.h) hands on.
  HORA_HOST_DEVICE void publishWord(std::uint64_t sizeWord, const std::uint64_t* stamp) {
    if (stamp != nullptr) {
      std::uint64_t* entry = fifo_.stamps + headSlot_ * kStampWords;
      for (std::uint64_t w = 0; w < kStampWords; ++w) entry[w] = stamp[w];
    }
    fifo_.sizes[headSlot_] = sizeWord;
    advanceHead();
  }

  // Sends one message of `bytes` bytes (zero allowed), a slot at a time.
  HORA_HOST_DEVICE Status send(const void* src, std::size_t bytes, std::uint64_t deadline) {
    const char* from = static_cast<const char*>(src);
    std::size_t left = bytes;
    do {
      char* slot = nullptr;
      const Status status = waitRoom(&slot, deadline);
      if (status != Status::Ok) return status;
      const std::size_t piece = left < fifo_.slotBytes ? left : fifo_.slotBytes;
      if (piece != 0) std::memcpy(slot, from, piece);
      from += piece;
      left -= piece;
      publish(piece, left == 0);
    } while (left != 0);
    return Status::Ok;
  }

  HORA_HOST_DEVICE std::uint64_t published() const { return head_; }

 private:
  HORA_HOST_DEVICE bool hasRoom() const { return head_ - knownTail_ < fifo_.slotCount; }
  HORA_HOST_DEVICE void advanceHead() {
    ++head_;
    headSlot_ = nextIndex(headSlot_, fifo_.slotCount);
    Ordering::storeRelease(fifo_.head, head_);
  }

  FifoHandle fifo_;
  std::uint64_t head_;            // slots published: the value of *fifo_.head
  std::uint64_t knownTail_;       // *fifo_.tail as last loaded
  std::uint64_t headSlot_;        // head_ % slotCount
};

template <class Ordering>
class SimpleReceiver {
 public:
  // Resumes the stream where the FIFO's tail says (0 for a new FIFO).
  HORA_HOST_DEVICE explicit SimpleReceiver(const FifoHandle& fifo)
      : fifo_(fifo),
        tail_(Ordering::loadRelaxed(fifo.tail)),
        knownHead_(Ordering::loadAcquire(fifo.head)),
        tailSlot_(tail_ % fifo.slotCount) {}

  // Without waiting: whether the oldest unread slot is there, and if so
  // *piece as waitData gives it.
  HORA_HOST_DEVICE bool tryData(SimplePiece* piece) {
    if (!hasData()) {
      knownHead_ = Ordering::loadAcquire(fifo_.head);
      if (!hasData()) return false;
    }
    describe(piece);
    return true;
  }

  // Without waiting: whether the slot `ahead` places after the oldest
  // unread one has been published, and if so *piece describes it (`ahead`
  // 0 is tryData's slot). Slots are still released oldest first: a relay
  // reads ahead to send several slots at once and releases each once it
  // has gone.
  HORA_HOST_DEVICE bool tryPeek(std::uint64_t ahead, SimplePiece* piece) {
    if (knownHead_ - tail_ <= ahead) {
      knownHead_ = Ordering::loadAcquire(fifo_.head);
      if (knownHead_ - tail_ <= ahead) return false;
    }
    std::uint64_t slot = tailSlot_ + ahead;
    if (slot >= fifo_.slotCount) slot -= fifo_.slotCount;
    describeSlot(slot, piece);
    return true;
  }

  // Waits for the oldest unread slot and describes it in *piece; `watch`
  // as spinUntil's.
  template <class Watch = NoWatch>
  HORA_HOST_DEVICE Status waitData(SimplePiece* piece, std::uint64_t deadline, Watch watch = Watch{}) {
    if (!hasData()) {
      const Status status = spinUntil<Ordering>(
          [&] {
            knownHead_ = Ordering::loadAcquire(fifo_.head);
            return hasData();
          },
          fifo_.abortFlag, deadline, watch);
      if (status != Status::Ok) return status;
    }
    describe(piece);
    return Status::Ok;
  }

  // Gives the slot waitData described back to the sender.
  HORA_HOST_DEVICE void release() {
    ++tail_;
    tailSlot_ = nextIndex(tailSlot_, fifo_.slotCount);
    Ordering::storeRelease(fifo_.tail, tail_);
  }

  // Receives one message into dst (capacity bytes); *bytes is its size. A
  // larger message is still consumed whole, its excess dropped: Overflow.
  HORA_HOST_DEVICE Status recv(void* dst, std::size_t capacity, std::size_t* bytes, std::uint64_t deadline) {
    char* to = static_cast<char*>(dst);
    std::size_t total = 0;
    for (;;) {
      SimplePiece piece{};
      const Status status = waitData(&piece, deadline);
      if (status != Status::Ok) return status;
      if (total < capacity) {
        const std::size_t room = capacity - total;
        const std::size_t take = piece.bytes < room ? piece.bytes : room;
        if (take != 0) std::memcpy(to + total, piece.data, take);
      }
      total += piece.bytes;
      release();
      if (piece.last) break;
    }
    *bytes = total;
    return total > capacity ? Status::Overflow : Status::Ok;
  }

  HORA_HOST_DEVICE std::uint64_t released() const { return tail_; }

 private:
  HORA_HOST_DEVICE bool hasData() const { return knownHead_ != tail_; }
  HORA_HOST_DEVICE void describe(SimplePiece* piece) { describeSlot(tailSlot_, piece); }
  HORA_HOST_DEVICE void describeSlot(std::uint64_t slot, SimplePiece* piece) {
    const std::uint64_t size = fifo_.sizes[slot];
    piece->data = fifo_.slots + slot * fifo_.slotBytes;
    piece->bytes = size & kSizeMask;
    piece->last = (size & kLastPiece) != 0;
    piece->stamped = (size & kStamped) != 0;
    piece->check = size >> kStampCheckShift & kStampCheckMask;
    piece->stamp = fifo_.stamps + slot * kStampWords;
  }

  FifoHandle fifo_;
  std::uint64_t tail_;            // slots released: the value of *fifo_.tail
  std::uint64_t knownHead_;       // *fifo_.head as last loaded
  std::uint64_t tailSlot_;        // tail_ % slotCount
};

}  // namespace hora::protocols
