// Shared memory as a hora connection. The sender owns a segment
// (shm_layout.h) that the receiver maps; the protocols of src/protocols/
// carry the byte stream through the two FIFOs in it, the same objects a
// kernel would run:
//
//  - Simple (protocols/simple.h) carries bulk data in slots. A posted
//    buffer is copied in a slot at a time; in place, writable() is a free
//    slot and commitWritten() publishes it, readable() is the unread rest of
//    the oldest slot and consumeRead() releases the slot once it is used up.
//    Every post and every commit starts a fresh slot, so the data of each
//    operation starts at a slot's (128-byte aligned) start.
//  - LL (protocols/ll.h) carries the messages the planner gave the LL
//    protocol (HORA_LL_MAX_BYTES), in pieces of at most kShmLLMaxBytes:
//    the receiver polls the data lines themselves, so a small message costs
//    one transfer of its lines and no separate counter.
//
// Which one carries a byte is decided by beginMessage(protocol) on both
// ends (protocol_switches.h); streams that never call it use Simple. Alignment
// padding moves nowhere: both ends count it and skip it.
//
// An operation's stamp (op_stamp.h) travels with the operation's first
// bytes, on the FIFO that carries them, at no cost of a transfer: in a
// Simple slot, a 30-bit check of it in the slot's size word and the stamp
// itself on the FIFO's stamps board (protocols/simple.h); in an LL
// message, the check in the line after the header and the stamp on the LL
// FIFO's board (protocols/ll.h). An operation that sends nothing here, or
// whose stamp must leave before its bytes (flushStamp), sends its stamp
// alone, in an empty Simple slot. The receiver compares the check with its
// own stamp's before any byte of the operation leaves the FIFO, and reads
// the full stamp only to word a mismatch. It looks for the stamp where its
// own operation's first byte comes from (Simple when it receives nothing),
// or alone ahead of LL bytes; if the stream went on on the other FIFO
// otherwise (HostOrdering's fences say which came first), the peer runs
// another operation. So is a stamped slot or message where none is due (the peer
// began another operation while this rank expected more bytes), or an
// unstamped one where one is.
//
// The sender's bytes count as sent once they are in a FIFO and the
// receiver has mapped it: from then on no buffer of the caller's is
// involved, and the data survives the sender's exit.
//
// The TCP socket that set the pair up stays open as a lifeline: it has no
// traffic, so when it becomes readable the peer has exited, or closed or
// aborted its communicator.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <vector>

#include "base/socket.h"
#include "protocols/host_ordering.h"
#include "protocols/ll.h"
#include "protocols/simple.h"
#include "transport/connection.h"
#include "transport/posted_queue.h"
#include "transport/stamp_queue.h"
#include "transport/shm/protocol_switches.h"
#include "transport/shm/shm_layout.h"
#include "transport/shm/shm_segment.h"

namespace hora::transport {

// The largest alignment alignStream() accepts.
inline constexpr std::size_t kMaxStreamAlignment = 64;

// A waiter sleeps this long at a time (data in shared memory wakes no
// descriptor): short, because a rank that went to sleep while its peer's
// CPU was briefly taken away should not make the next step wait long.
inline constexpr std::chrono::microseconds kShmSleepSlice{50};

struct ShmOptions {
  // The Simple FIFO of each direction, about, and the executor's slice,
  // which its slots divide (shmGeometry() in shm_layout.h).
  std::size_t fifoBytes = 4 << 20;
  std::size_t sliceBytes = 128 << 10;
  // Each end wakes the other where it sleeps (wake_line.h): for ranks that
  // share cores, which sleep instead of yielding (core/progress_wait.h).
  bool wakeSleepers = false;
};

class ShmSendConnection;
class ShmRecvConnection;

// The handshake over `lifeline` (already introduced) never waits on the
// peer's progress, so two ranks that both connect before they accept cannot
// deadlock: the sender creates the segment and sends its pid/fd at once; the
// receiver maps it, tests whether it may read the sender's memory
// (process_vm_readv: same user, no ptrace restriction) and answers with one
// byte that the sender reads later (then closes its fd). A `busy`
// connection has its FIFO's pages allocated at once; others get each page
// when a message first uses it (connection set-up then costs little even
// when every pair of many ranks connects).
std::unique_ptr<ShmSendConnection> connectShmSender(Socket lifeline, std::string peerName,
                                                    const ShmOptions& options,
                                                    const Deadline& deadline,
                                                    const std::atomic<bool>* abort, bool busy);
std::unique_ptr<ShmRecvConnection> acceptShmReceiver(Socket lifeline, std::string peerName,
                                                     const Deadline& deadline,
                                                     const std::atomic<bool>* abort);

using SimpleSender = protocols::SimpleSender<protocols::HostOrdering>;
using SimpleReceiver = protocols::SimpleReceiver<protocols::HostOrdering>;
using LLSender = protocols::LLSender<protocols::HostOrdering>;
using LLReceiver = protocols::LLReceiver<protocols::HostOrdering>;

class ShmSendConnection final : public SendConnection {
 public:
  explicit ShmSendConnection(ShmSegment segment, Socket lifeline, std::string peerName);
  void post(const void* data, std::size_t bytes) override {
    if (bytes > 0) bytesFollow_ = true;
    queue_.post(static_cast<const char*>(data), bytes);
  }
  std::uint64_t postedBytes() const override { return queue_.posted(); }
  // A posted buffer is free again once copied into a FIFO, provided the
  // receiver has mapped it: from then on the bytes outlive this process.
  std::uint64_t completedBytes() const override { return awaitingAck_ ? 0 : queue_.completed(); }
  bool progress() override;
  pollfd pollEntry() const override;
  std::chrono::microseconds sleepSlice() const override { return kShmSleepSlice; }
  void checkAlive() override;
  // None while the receiver's answer is due: it comes over the lifeline,
  // which poll() watches, and rings nothing.
  WakeLine* wakeLine() override { return wakes_ && !awaitingAck_ ? &header_->senderSleeps : nullptr; }
  const std::string& peerName() const override { return peer_; }

  // Busy until the receiver has answered the handshake (a single-copy
  // sender waits for that answer, which poll() then watches the lifeline
  // for) and has taken every byte (a single-copy sender waits for that),
  // while an in-place sender waits for room, and while a stamp that must
  // leave alone waits for a slot.
  bool idle() const override {
    return !awaitingAck_ && completedBytes() == postedBytes() && acknowledgedBytes() >= postedBytes() &&
           !wantsRoom_ && stamps_.empty();
  }
  void alignStream(std::size_t alignment) override;
  void beginMessage(protocols::Protocol protocol, const OpStamp* stamp) override;
  void flushStamp() override;
  bool sendsInPlace() const override { return true; }
  std::span<char> writable(std::size_t maxBytes) override;
  void commitWritten(std::size_t bytes) override;

  PeerMemoryAccess peerMemoryAccess() override;
  std::uint64_t acknowledgedBytes() const override {
    return protocols::HostOrdering::loadAcquire(&header_->taken);
  }

 private:
  // Moves the front of a posted buffer into a FIFO; returns the bytes moved.
  std::size_t moveOut(const char* data, std::size_t bytes);
  // The oldest stamp is due: the stream has reached its operation's start.
  bool stampDue() const { return stamps_.frontFrom() <= queue_.completed(); }
  // Publishes the due stamps that must leave alone, each in an empty
  // Simple slot; false while a slot it needs is not free.
  bool publishStampsAlone();
  // Publishes a Simple slot of `bytes`, with the stamp if one is due.
  void publishSimple(std::size_t bytes);
  // The oldest stamp has left.
  void stampLeft();
  // Whether the LL FIFO has room for a message of `bytes` now (with the
  // stamp if one is due).
  bool llRoomFor(std::size_t bytes);
  // Sends `bytes` as one LL message, with the stamp if one is due; false
  // (nothing sent) while the FIFO has no room for it.
  bool sendLL(const char* data, std::size_t bytes);
  // Reads the receiver's answer once it is there (non-blocking).
  void collectAck();
  // After publishing: the receiver may be asleep, waiting for it.
  void wakeReceiver() {
    if (wakes_) wakeIfSleeping(header_->receiverSleeps);
  }

  ShmSegment segment_;
  ShmSegmentHeader* header_;
  bool wakes_;  // header_->wakesSleepers
  SimpleSender simple_;
  LLSender ll_;
  Socket lifeline_;
  std::string peer_;
  PostedQueue<const char*> queue_;  // "moved" = in a FIFO
  ProtocolSwitches routes_;
  std::vector<char> llStaging_;  // writable() while the route is LL
  char* llOut_;                  // llStaging_'s 64-byte aligned start
  ShmRoute writableRoute_ = ShmRoute::Simple;
  bool awaitingAck_ = true;
  bool peerReadsUs_ = false;  // from the receiver's answer
  bool wantsRoom_ = false;    // writable() found less room than asked for
  // Stamps of operations begun here, in stream order, until they have
  // left with the first slot published, or alone (flushStamp found no
  // bytes to carry them). Only the newest may still wait for bytes.
  StampQueue<OutgoingStamp> stamps_;
  bool bytesFollow_ = false;  // bytes of the newest stamp's operation are posted
  bool spanOut_ = false;      // writable() gave room not yet committed
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
  pollfd pollEntry() const override { return {idle() ? -1 : lifeline_.fd(), POLLIN, 0}; }
  std::chrono::microseconds sleepSlice() const override { return kShmSleepSlice; }
  void checkAlive() override;
  WakeLine* wakeLine() override { return wakes_ ? &header_->receiverSleeps : nullptr; }
  const std::string& peerName() const override { return peer_; }
  // Busy while bytes or a stamp are due.
  bool idle() const override { return completedBytes() == postedBytes() && !stampDue(); }

  void alignStream(std::size_t alignment) override;
  void beginMessage(protocols::Protocol protocol, const OpStamp* stamp) override;
  bool stampChecked() override;
  bool receivesInPlace() const override { return true; }
  void postInPlace(std::size_t bytes) override { queue_.postInPlace(bytes); }
  std::span<const char> readable() override;
  void consumeRead(std::size_t bytes) override;

  bool readsPeerMemory() const override { return readsSender_; }
  void readPeerMemory(void* dst, std::uint64_t address, std::size_t bytes) override;

 private:
  // What has arrived of the route that carries the next byte (empty for
  // none; nothing until a stamp due there has been checked), and releasing
  // `bytes` of it.
  std::span<const char> arrived(ShmRoute route);
  // A stamp is expected at or before the next byte of the stream.
  bool stampDue() const { return expected_.frontFrom() <= queue_.completed(); }
  // The route of this rank's next byte, or Simple when it has no receive
  // posted (the stamp of an operation that receives nothing here comes
  // alone, in an empty Simple slot).
  ShmRoute nextByteRoute();
  // Checks the due stamp, which must come on `route`; false while it has
  // not come. A Simple slot holding only the stamp is released.
  bool checkDueStamp(ShmRoute route);
  bool checkDueStampOnSimple();
  bool checkDueStampOnLL();
  // The due stamp has matched.
  void dueStampChecked();
  // ... in the Simple slot described in slot_: released when it holds only
  // the stamp, else held for its bytes.
  void takeSimpleStamp();
  // Throws the mismatch of a stamp `arrived` (none: bytes came without
  // one) against the one due here (`due`) or none.
  [[noreturn, gnu::cold, gnu::noinline]] void failStamp(bool due, std::optional<OpStamp> arrived);
  // The stamp of the Simple slot described in slot_, if it has one.
  std::optional<OpStamp> simpleSlotStamp() const;
  // Throws the mismatch the LL message with `header` at the stream's next
  // line shows (due: against the due stamp).
  [[noreturn, gnu::cold, gnu::noinline]] void failLLMessage(std::uint32_t header, bool due);
  // Checks every stamp due by now, the last one coming with this rank's
  // next byte, on `next`; false while one has not come. An operation that
  // another began at the same byte received nothing here: its stamp came
  // alone.
  bool checkDueStamps(ShmRoute next) {
    while (stampDue())
      if (!checkDueStamp(expected_.nextFrom() <= queue_.completed() ? ShmRoute::Simple : next)) return false;
    return true;
  }
  void release(ShmRoute route, std::size_t bytes);
  // The unread rest of the oldest Simple slot (empty while none is there).
  std::span<const char> simpleArrived();
  // The unread rest of the oldest LL message, decoded into llInbox_.
  std::span<const char> llArrived();
  // Tells the sender how far the stream has been taken.
  void publishTaken();
  // After freeing room or taking bytes: the sender may be asleep, waiting.
  void wakeSender() {
    if (wakes_) wakeIfSleeping(header_->senderSleeps);
  }

  ShmSegment segment_;
  ShmSegmentHeader* header_;
  bool wakes_;  // header_->wakesSleepers
  SimpleReceiver simple_;
  LLReceiver ll_;
  Socket lifeline_;
  std::string peer_;
  PostedQueue<char*> queue_;
  ProtocolSwitches routes_;
  protocols::SimplePiece slot_{};  // the Simple slot being read, if holdingSlot_
  std::size_t slotRead_ = 0;       // its bytes consumed
  bool holdingSlot_ = false;
  std::vector<char> llInboxStorage_;
  char* llInbox_;                    // 64-byte aligned; one LL message's data
  std::size_t llInboxBytes_ = 0;     // its size
  std::size_t llInboxRead_ = 0;      // its bytes consumed
  std::uint64_t llLinesSeen_ = 0;    // of the message now arriving (0: none)
  std::uint64_t llDataLine_ = 0;     // its first data line
  bool llStampChecked_ = false;      // the next message's stamp is checked
  std::uint64_t llStampsTaken_ = 0;  // stamped LL messages consumed
  pid_t senderPid_;
  bool senderIsUs_;
  bool readsSender_;
  // Stamps of operations begun here, in stream order, until checked.
  struct ExpectedStamp {
    OpStamp stamp;
    std::uint64_t from;
  };
  StampQueue<ExpectedStamp> expected_;
};

}  // namespace hora::transport
