// The LL (low-latency) protocol: every 8-byte line of the FIFO carries 4
// bytes of data and a 4-byte flag, written together as one atomic store. The
// receiver polls the line itself: when its flag holds the value expected for
// that position of the stream, its data is there too. No head counter to
// publish and no fence between data and signal, so a small message costs the
// sender nothing but its own stores and the receiver one transfer per line.
// The price is half the FIFO's bytes spent on flags.
//
// The FIFO's slots are taken together as one ring of L = slotCount *
// slotBytes / 8 lines. Line i of the stream (i counts from 0 and only grows)
// lives at i % L and carries the flag
//
//   flag(i) = i / L + 1   (mod 2^32)
//
// so the flag changes every time the ring wraps: the previous occupant of a
// position, line i - L, has flag(i) - 1, and a new FIFO's zeroed lines hold
// 0, the flag of "line -L". The sender never runs more than L lines ahead of
// the receiver (below), so no older line can sit at that position and the
// receiver cannot take a stale line for a new one.
//
// A message is a header line whose data is its size in bytes, then
// ceil(bytes / 4) data lines, the last one padded with zeros: a zero-byte
// message is the header alone, and the receiver needs no size in advance.
//
// Stamps: a message that begins an operation may carry the operation's
// stamp, as a Simple slot can (simple.h; the executor's agreement check,
// core/agreement.h). Its header then has kLLStamped set and the line after
// it holds the stamp's 30-bit check: the receiver reads the two together,
// so comparing the check costs no transfer of its own. The full stamp goes
// to the FIFO's stamps board, in the entry of the message's number among
// the stream's stamped messages (modulo llStampEntries), which both sides
// count; the receiver reads it only to word a mismatch. It is intact while
// its message is unconsumed: the sender reuses an entry only once the
// message that last used it has been consumed (tryStampRoom). The board
// is written before the message's lines, with a release fence between, so
// a receiver that saw the lines and then fences (acquire) reads the entry
// whole.
//
// Credits: the receiver release-stores tail = lines consumed at the end of
// each slot (i + 1 a multiple of slotBytes / 8) and of each message; the
// sender acquire-loads tail and writes line i only once i < tail + L. The
// release orders the receiver's loads of the lines before its tail store,
// the acquire orders the sender's new stores after its tail load, so a line
// is never overwritten before it was read. The lines themselves need no
// ordering at all: relaxed whole-line stores and loads. The sender writes in
// pieces that never cross a slot boundary, so the credits it waits for are
// always ones the receiver has returned, even with a single slot.
//
// The sender also stores its line count in head (relaxed: only it reads it)
// at the end of each message, so that a new LLSender resumes the stream; the
// receiver reads none of it.
//
// waitRoom/writeLine/advance and waitLine/consume are the per-line steps
// send() and recv() are made of; a warp or block can share them out, one
// line per thread, with one thread waiting and advancing between barriers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/host_device.h"
#include "protocols/fifo_handle.h"
#include "protocols/spin_wait.h"
#include "protocols/status.h"

namespace hora::protocols {

inline constexpr std::uint64_t kLLLineBytes = 8;
inline constexpr std::uint64_t kLLDataBytes = 4;
// In a header line: the message carries a stamp. The size is the rest, so
// a message has less than 2 GiB.
inline constexpr std::uint32_t kLLStamped = std::uint32_t{1} << 31;
inline constexpr std::uint64_t kLLMaxMessageBytes = kLLStamped - 1;

HORA_HOST_DEVICE constexpr std::uint64_t llLines(const FifoHandle& fifo) {
  return fifo.slotCount * fifo.slotBytes / kLLLineBytes;
}
HORA_HOST_DEVICE constexpr std::uint64_t llLinesPerSlot(const FifoHandle& fifo) {
  return fifo.slotBytes / kLLLineBytes;
}
HORA_HOST_DEVICE constexpr std::uint32_t llFlag(std::uint64_t line, std::uint64_t ringLines) {
  return static_cast<std::uint32_t>(line / ringLines + 1);
}
// llFlag and the line's index in the ring, as a reader and writer of
// every line computes them: with a mask and a shift for a ring of a power
// of two lines (every FIFO hora sets up), which costs a cycle where a
// 64-bit division costs tens, on both sides of every line; with a
// division otherwise.
class LLRing {
 public:
  HORA_HOST_DEVICE explicit LLRing(std::uint64_t lines) : lines_(lines), mask_(lines - 1) {
    if ((lines & mask_) == 0)
      while ((std::uint64_t{1} << shift_) != lines) ++shift_;
    else shift_ = -1;
  }
  HORA_HOST_DEVICE std::uint64_t lines() const { return lines_; }
  HORA_HOST_DEVICE std::uint64_t index(std::uint64_t line) const {
    return shift_ >= 0 ? line & mask_ : line % lines_;
  }
  HORA_HOST_DEVICE std::uint32_t flag(std::uint64_t line) const {
    return static_cast<std::uint32_t>((shift_ >= 0 ? line >> shift_ : line / lines_) + 1);
  }

 private:
  std::uint64_t lines_;
  std::uint64_t mask_;
  int shift_ = 0;  // log2(lines), or -1
};

HORA_HOST_DEVICE constexpr std::uint64_t llPack(std::uint32_t data, std::uint32_t flag) {
  return (static_cast<std::uint64_t>(flag) << 32) | data;
}
// Lines a message of `bytes` bytes takes: a header and its data.
HORA_HOST_DEVICE constexpr std::uint64_t llMessageLines(std::uint64_t bytes) {
  return 1 + (bytes + kLLDataBytes - 1) / kLLDataBytes;
}
// A stamped message: the header, the check, then the data.
inline constexpr std::uint64_t kLLCheckLine = 1;
inline constexpr std::uint64_t kLLStampedDataLine = 2;
HORA_HOST_DEVICE constexpr std::uint64_t llStampedMessageLines(std::uint64_t bytes) {
  return llMessageLines(bytes) + 1;
}
// Entries of the stamps board a stream of stamped messages uses.
inline constexpr std::uint64_t kLLMaxStampEntries = 16;
HORA_HOST_DEVICE constexpr std::uint64_t llStampEntries(const FifoHandle& fifo) {
  return fifo.slotCount < kLLMaxStampEntries ? fifo.slotCount : kLLMaxStampEntries;
}

// Word j (from 0) of a message's data: bytes 4j.. of src, zero-padded.
HORA_HOST_DEVICE inline std::uint32_t llWord(const char* src, std::size_t bytes, std::uint64_t j) {
  const std::size_t at = static_cast<std::size_t>(j * kLLDataBytes);
  const std::size_t n = bytes - at < kLLDataBytes ? bytes - at : kLLDataBytes;
  std::uint32_t word = 0;
  std::memcpy(&word, src + at, n);
  return word;
}

template <class Ordering>
class LLSender {
 public:
  // Resumes the stream where the FIFO's head says (0 for a new FIFO).
  HORA_HOST_DEVICE explicit LLSender(const FifoHandle& fifo)
      : fifo_(fifo),
        ring_(llLines(fifo)),
        sent_(Ordering::loadRelaxed(fifo.head)),
        knownTail_(Ordering::loadAcquire(fifo.tail)) {}

  // Waits until lines [sent, sent + count) may be written. They must not
  // reach past the end of the slot that line `sent` falls in: the receiver
  // returns credits a slot at a time, so room beyond it may never come.
  // `watch` as spinUntil's.
  template <class Watch = NoWatch>
  HORA_HOST_DEVICE Status waitRoom(std::uint64_t count, std::uint64_t deadline, Watch watch = Watch{}) {
    if (hasRoom(count)) return Status::Ok;
    return spinUntil<Ordering>(
        [&] {
          knownTail_ = Ordering::loadAcquire(fifo_.tail);
          return hasRoom(count);
        },
        fifo_.abortFlag, deadline, watch);
  }
  // Without waiting: whether lines [sent, sent + count) may be written now,
  // wherever they end (count at most the ring's lines). A caller that
  // checks a whole message this way can then send() it without a wait.
  HORA_HOST_DEVICE bool tryRoom(std::uint64_t count) {
    if (hasRoom(count)) return true;
    knownTail_ = Ordering::loadAcquire(fifo_.tail);
    return hasRoom(count);
  }
  // Writes `data` as line sent + k, with that line's flag.
  HORA_HOST_DEVICE void writeLine(std::uint64_t k, std::uint32_t data) {
    const std::uint64_t line = sent_ + k;
    Ordering::storeLine(lineAt(line), llPack(data, ring_.flag(line)));
  }
  // Writes lines sent + k and sent + k + 1 in one access (Ordering::
  // storeLinePair). sent + k must be even, and the ring's lines even, so
  // that the pair is 16-byte aligned and never straddles the ring's end;
  // both lines then carry one flag.
  HORA_HOST_DEVICE void writePair(std::uint64_t k, std::uint32_t first, std::uint32_t second) {
    const std::uint64_t line = sent_ + k;
    const std::uint32_t flag = ring_.flag(line);
    Ordering::storeLinePair(lineAt(line), llPack(first, flag), llPack(second, flag));
  }
  HORA_HOST_DEVICE void advance(std::uint64_t count) { sent_ += count; }
  // Records the lines written in head, so that the next LLSender of this
  // FIFO (the next kernel) resumes after them.
  HORA_HOST_DEVICE void recordProgress() { Ordering::storeRelaxed(fifo_.head, sent_); }

  // Sends one message of `bytes` bytes (zero allowed; at most
  // kLLMaxMessageBytes).
  HORA_HOST_DEVICE Status send(const void* src, std::size_t bytes, std::uint64_t deadline) {
    if (bytes > kLLMaxMessageBytes) return Status::Overflow;
    const char* from = static_cast<const char*>(src);
    return sendLines(llMessageLines(bytes), deadline, [&](std::uint64_t j) {
      return j == 0 ? static_cast<std::uint32_t>(bytes) : llWord(from, bytes, j - 1);
    });
  }
  // Without waiting: whether a stamped message of `lines` lines may be
  // sent now (room for it, and its board entry free).
  HORA_HOST_DEVICE bool tryStampRoom(std::uint64_t lines) {
    if (!tryRoom(lines)) return false;
    const std::uint64_t reusable = stampEnds_[stampEntry_];
    if (knownTail_ >= reusable) return true;
    knownTail_ = Ordering::loadAcquire(fifo_.tail);
    return knownTail_ >= reusable;
  }
  // send() of a message that begins an operation, which tryStampRoom
  // found room for: `stamp` (kStampWords words) goes to the board, its
  // 30-bit `check` with the message. Host only (a release fence).
  HORA_HOST_DEVICE void sendStamped(const void* src, std::size_t bytes, const std::uint64_t* stamp,
                                    std::uint32_t check) {
    std::uint64_t* entry = fifo_.stamps + stampEntry_ * kStampWords;
    for (std::uint64_t w = 0; w < kStampWords; ++w) entry[w] = stamp[w];
    Ordering::fenceRelease();
    stampEnds_[stampEntry_] = sent_ + llStampedMessageLines(bytes);
    stampEntry_ = stampEntry_ + 1 == llStampEntries(fifo_) ? 0 : stampEntry_ + 1;
    const char* from = static_cast<const char*>(src);
    sendLines(llStampedMessageLines(bytes), kNoDeadline, [&](std::uint64_t j) -> std::uint32_t {
      if (j == 0) return static_cast<std::uint32_t>(bytes) | kLLStamped;
      if (j == kLLCheckLine) return check;
      return llWord(from, bytes, j - kLLStampedDataLine);
    });
  }

  HORA_HOST_DEVICE std::uint64_t sentLines() const { return sent_; }

 private:
  // Writes lines [0, total) of a message, line j holding wordOf(j), in
  // pieces that never cross a slot's end.
  template <class WordOf>
  HORA_HOST_DEVICE Status sendLines(std::uint64_t total, std::uint64_t deadline, const WordOf& wordOf) {
    const std::uint64_t perSlot = llLinesPerSlot(fifo_);
    for (std::uint64_t done = 0; done < total;) {
      // Up to the end of the slot the next line falls in.
      const std::uint64_t toSlotEnd = perSlot - sent_ % perSlot;
      const std::uint64_t count = total - done < toSlotEnd ? total - done : toSlotEnd;
      const Status status = waitRoom(count, deadline);
      if (status != Status::Ok) return status;
      for (std::uint64_t k = 0; k < count; ++k) writeLine(k, wordOf(done + k));
      advance(count);
      done += count;
    }
    recordProgress();
    return Status::Ok;
  }
  HORA_HOST_DEVICE bool hasRoom(std::uint64_t count) const { return sent_ + count - knownTail_ <= ring_.lines(); }
  HORA_HOST_DEVICE std::uint64_t* lineAt(std::uint64_t line) const {
    return reinterpret_cast<std::uint64_t*>(fifo_.slots) + ring_.index(line);
  }

  FifoHandle fifo_;
  LLRing ring_;              // L, lines in the ring
  std::uint64_t sent_;       // lines written
  std::uint64_t knownTail_;  // *fifo_.tail as last loaded
  // Stamps: the next board entry, and where the message that last used
  // each entry ends (free once the tail has passed it).
  std::uint64_t stampEntry_ = 0;
  std::uint64_t stampEnds_[kLLMaxStampEntries] = {};
};

template <class Ordering>
class LLReceiver {
 public:
  // Resumes the stream where the FIFO's tail says (0 for a new FIFO).
  HORA_HOST_DEVICE explicit LLReceiver(const FifoHandle& fifo)
      : fifo_(fifo), ring_(llLines(fifo)), received_(Ordering::loadRelaxed(fifo.tail)) {}

  // Without waiting: whether line received + k has arrived, and if so *data.
  HORA_HOST_DEVICE bool tryLine(std::uint64_t k, std::uint32_t* data) const {
    const std::uint64_t line = received_ + k;
    const std::uint64_t value =
        Ordering::loadLine(reinterpret_cast<const std::uint64_t*>(fifo_.slots) + ring_.index(line));
    if (static_cast<std::uint32_t>(value >> 32) != ring_.flag(line)) return false;
    *data = static_cast<std::uint32_t>(value);
    return true;
  }
  // tryLine for lines received + k and received + k + 1 in one access, as
  // LLSender::writePair wrote them: true once both have arrived.
  HORA_HOST_DEVICE bool tryPair(std::uint64_t k, std::uint32_t* first, std::uint32_t* second) const {
    const std::uint64_t line = received_ + k;
    std::uint64_t a = 0, b = 0;
    Ordering::loadLinePair(reinterpret_cast<const std::uint64_t*>(fifo_.slots) + ring_.index(line), &a, &b);
    const std::uint32_t flag = ring_.flag(line);
    if (static_cast<std::uint32_t>(a >> 32) != flag || static_cast<std::uint32_t>(b >> 32) != flag) return false;
    *first = static_cast<std::uint32_t>(a);
    *second = static_cast<std::uint32_t>(b);
    return true;
  }
  // Waits for line received + k to arrive; *data is its 4 bytes.
  HORA_HOST_DEVICE Status waitLine(std::uint64_t k, std::uint32_t* data, std::uint64_t deadline) {
    const std::uint64_t line = received_ + k;
    const std::uint64_t* at = reinterpret_cast<const std::uint64_t*>(fifo_.slots) + ring_.index(line);
    const std::uint32_t flag = ring_.flag(line);
    std::uint64_t value = Ordering::loadLine(at);
    if (static_cast<std::uint32_t>(value >> 32) != flag) {
      const Status status = spinUntil<Ordering>(
          [&] {
            value = Ordering::loadLine(at);
            return static_cast<std::uint32_t>(value >> 32) == flag;
          },
          fifo_.abortFlag, deadline);
      if (status != Status::Ok) return status;
    }
    *data = static_cast<std::uint32_t>(value);
    return Status::Ok;
  }
  // Moves past `count` lines, every one of them read, and returns them to
  // the sender as credits.
  HORA_HOST_DEVICE void consume(std::uint64_t count) {
    pass(count);
    returnCredits();
  }
  // consume() in two steps, for a block that reads a piece's lines in many
  // threads: each thread passes them in its own copy of the receiver, and
  // one returns the credits once a barrier has ordered every read before.
  HORA_HOST_DEVICE void pass(std::uint64_t count) { received_ += count; }
  HORA_HOST_DEVICE void returnCredits() { Ordering::storeRelease(fifo_.tail, received_); }

  // Receives one message into dst (capacity bytes); *bytes is its size. A
  // larger message is still consumed whole, its excess dropped: Overflow.
  // Streams without stamps only: a stamped message is read line by line
  // by a receiver that expects stamps (transport/shm).
  HORA_HOST_DEVICE Status recv(void* dst, std::size_t capacity, std::size_t* bytes, std::uint64_t deadline) {
    char* to = static_cast<char*>(dst);
    std::uint32_t size = 0;
    Status status = waitLine(0, &size, deadline);
    if (status != Status::Ok) return status;
    step();
    const std::uint64_t words = llMessageLines(size) - 1;
    for (std::uint64_t j = 0; j < words; ++j) {
      std::uint32_t word = 0;
      status = waitLine(0, &word, deadline);
      if (status != Status::Ok) return status;
      const std::uint64_t at = j * kLLDataBytes;
      if (at < capacity) {
        const std::uint64_t n = capacity - at < kLLDataBytes ? capacity - at : kLLDataBytes;
        const std::uint64_t inMessage = size - at < n ? size - at : n;
        std::memcpy(to + at, &word, static_cast<std::size_t>(inMessage));
      }
      step();
    }
    // Credits for the lines of this message not yet returned at a slot end.
    if (received_ % llLinesPerSlot(fifo_) != 0) Ordering::storeRelease(fifo_.tail, received_);
    *bytes = size;
    return size > capacity ? Status::Overflow : Status::Ok;
  }

  HORA_HOST_DEVICE std::uint64_t receivedLines() const { return received_; }
  // The board entry of stamped message number `number` (from 0) of the
  // stream: kStampWords words, intact while that message is unconsumed.
  HORA_HOST_DEVICE const std::uint64_t* stampEntry(std::uint64_t number) const {
    return fifo_.stamps + number % llStampEntries(fifo_) * kStampWords;
  }

 private:
  // Past one line; at the end of a slot, its lines go back as credits.
  HORA_HOST_DEVICE void step() {
    ++received_;
    if (received_ % llLinesPerSlot(fifo_) == 0) Ordering::storeRelease(fifo_.tail, received_);
  }

  FifoHandle fifo_;
  LLRing ring_;             // L, lines in the ring
  std::uint64_t received_;  // lines consumed
};

}  // namespace hora::protocols
