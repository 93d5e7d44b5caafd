// hora's RDMA protocol, written once over the QueuePair seam (queue_pair.h)
// for every backend: a byte stream (byte_stream.h) from a sender to a
// receiver through slots in the receiver's memory, which the receiver
// grants one at a time.
//
//   receiver                                        sender
//   slots: N x S bytes, registered                  credit ring: N records, registered
//   grant: RDMA-write {slot address, size, key,  -> ring[g % N]   (seq g + 1 last)
//          seq} into the sender's credit ring
//                                                   a credit with the next seq: copy up
//                                                   to S stream bytes into staging slot
//        <- RDMA write staging -> that slot
//        <- write with immediate {slot, bytes}      (lands after the write: one QP)
//   receive completion: the slot holds `bytes`
//   the stream reads them; the drained slot is granted again
//
// Set-up never waits for the peer's half (both ends of a ring connect their
// sending side first): the sender sends its queue pair's address and where
// its credit ring is, and goes on; the receiver, made later, reads them,
// connects and answers with its address; the sender, at its first use,
// reads that, connects and says it is ready; and only then does the
// receiver grant credits, so no write reaches a queue pair not yet
// connected.
//
// A connection may use several queue pairs (NCCL_IB_QPS_PER_CONNECTION):
// grant g goes to queue pair (g - 1) mod k, whose receive it posts and whose
// registration of the slots it names, and the sender writes that slot over
// the same queue pair, so each write with immediate still lands after its
// write. Completions of different queue pairs come in any order; the
// receiver hands bytes out in grant order, which is the order the sender
// filled the slots in. Credits all travel over queue pair 0.
//
// Zero copy: bytes that lie in a buffer the program registered with its
// communicator (ncclCommRegister; transport/user_registrations.h) go to the
// granted slot straight from that buffer, registered with each queue pair
// on first use and kept registered until the program deregisters it (so a
// steady state registers nothing); other bytes are copied into the
// sender's registered staging slot first. A slot sent from the program's
// buffer is held until its write with immediate completes: heldBytes()
// tells the connection not to count those bytes as sent (the caller may
// not reuse its buffer yet).
//
// The sender never writes where it holds no credit, so a slot is never
// overwritten before the receiver has drained it, and every write with
// immediate finds a receive posted (the receiver posts one per slot before
// it grants it). The TCP connection that set the pair up stays open as the
// lifeline: when it closes, the peer is gone, and the error names it.
// A sender that has finished may close its end before the receiver's last
// grants reach it: a receiver's failed completion is an error only once it
// needs bytes that did not come.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/socket.h"
#include "transport/byte_stream.h"
#include "transport/memory_owner.h"
#include "transport/rdma/completion_wait.h"
#include "transport/rdma/queue_pair.h"
#include "transport/user_registrations.h"

namespace hora::transport::rdma {

// One grant, as the receiver writes it into the sender's credit ring.
// `sequence` is last: the sender reads a record only once it holds the
// sequence number it waits for.
// The protocol assumes a write lands in ascending address order, so that
// the sequence, last, is seen only after the rest (a backend whose writes
// may land otherwise must carry grants another way).
struct CreditRecord {
  std::uint64_t address = 0;   // of the slot, as the sender writes to it
  std::uint64_t key = 0;       // its remote key
  std::uint32_t bytes = 0;     // its size
  std::uint32_t slot = 0;      // its number, for the immediate
  std::uint64_t sequence = 0;  // 1, 2, 3, ...: 0 means never granted
};
static_assert(sizeof(CreditRecord) == 32);

struct CreditGeometry {
  std::size_t slots = 8;               // N
  std::size_t slotBytes = 128 * 1024;  // S
};

// The immediate of a write that filled a slot: slot number and byte count.
std::uint32_t packImmediate(std::size_t slot, std::size_t bytes);
void unpackImmediate(std::uint32_t immediate, std::size_t& slot, std::size_t& bytes);

// The most queue pairs one connection may use.
inline constexpr std::size_t kMaxQueuePairsPerConnection = 128;

using QueuePairFactory = std::function<std::unique_ptr<QueuePair>()>;

class CreditSendStream final : public ByteStream {
 public:
  // Sets the pair up over `lifeline` with the peer's CreditRecvStream; the
  // slots take turns over `queuePairs` (one or more).
  // `registrations`: the program's registered buffers, sent from without
  // a copy (null: every byte is copied).
  CreditSendStream(std::vector<std::unique_ptr<QueuePair>> queuePairs, Socket lifeline, std::string peerName,
                   const CreditGeometry& geometry, const Deadline& deadline,
                   std::shared_ptr<const UserRegistrations> registrations = nullptr);
  // Waits, briefly, for the writes still in flight (flushOnClose).
  ~CreditSendStream() override;
  std::size_t trySendTwo(const void* first, std::size_t firstBytes, const void* second,
                         std::size_t secondBytes) override;
  std::size_t tryRecvTwo(void*, std::size_t, void*, std::size_t) override { return 0; }
  pollfd pollEntry(bool sending) const override;
  void checkAlive() override;
  bool mayHold() const override { return registrations_ != nullptr; }
  std::size_t heldBytes() const override;
  // Releases the queue pairs' registrations of buffers the program has
  // deregistered, once no write from them is in flight: at every send, and
  // when the program deregisters (ByteStream::releaseDeregistered).
  void releaseDeregistered() override;

  // Bytes sent straight from registered program buffers, and how many
  // such buffers were registered with the queue pairs.
  std::uint64_t zeroCopyBytes() const { return zeroCopyBytes_; }
  std::uint64_t userRegistrationsMade() const { return userRegistrationsMade_; }

 private:
  // A program buffer registered with every queue pair.
  struct UserRegion {
    UserRegistrations::Range range;
    std::vector<Region> perQueuePair;
    std::size_t writesInFlight = 0;
    bool deregistered = false;  // by the program: not used again, released once idle
  };
  void reap();  // completions: staging slots free again, or an error
  // Closing a queue pair discards the requests it has not carried out yet
  // (verbs promises nothing for them), and a sender that has finished its
  // part may close while its last writes are still on the way: the
  // receiver would then wait for bytes that were accepted here. So, before
  // the queue pairs close, the writes in flight are given up to
  // kCloseFlushTime to complete; a peer known gone, or a failed write (now
  // or before), ends the wait at once (nothing more will land).
  void flushOnClose() noexcept;
  bool writesInFlight() const;
  // Reads the receiver's address, connects and says so; true once done.
  bool finishSetup();
  // The receiver has granted the credit the next send needs.
  bool nextCreditArrived() const;
  // The registered program buffer holding [data, data + bytes), registered
  // with the queue pairs now if it was not yet; null if there is none.
  UserRegion* userRegionFor(const char* data, std::size_t bytes);

  // Registered memory is declared before the queue pairs, so that they are
  // destroyed first: until a queue pair is closed, the device may still
  // move bytes into or out of what it registered (a peer's late write, a
  // manual-progress provider's progress thread), and freed memory there
  // is a crash or silent corruption. This holds when a constructor throws
  // too, which an explicit destructor would not cover.
  // Names this stream's own buffers to the device (memory_owner.h): its
  // queue pairs share their registrations.
  std::uint64_t memoryOwner_ = newMemoryOwner();
  std::vector<CreditRecord> ring_;  // written by the receiver, over queue pair 0
  std::vector<char> staging_;
  std::vector<std::unique_ptr<QueuePair>> qps_;
  CompletionWait completionWait_;  // over qps_
  bool connected_ = false;
  std::vector<char> answer_;  // the receiver's addresses as they come: length, then bytes, each
  Socket lifeline_;
  std::string peer_;
  CreditGeometry geometry_;
  Region ringRegion_;
  std::vector<Region> stagingRegions_;  // per queue pair
  std::vector<bool> stagingBusy_;
  std::uint64_t nextSequence_ = 1;
  std::vector<std::size_t> inFlight_;  // per queue pair
  bool completionFailed_ = false;  // the counts above are stale from then on
  std::shared_ptr<const UserRegistrations> registrations_;
  std::uint64_t registrationsSeen_ = 0;  // their generation when last looked at
  std::list<UserRegion> userRegions_;  // a list: held slots point into it
  // Per slot, while its write from a program buffer is in flight: that
  // buffer, and the stream position the slot's bytes start at.
  struct Held {
    UserRegion* region = nullptr;  // null: not held
    std::uint64_t from = 0;
  };
  std::vector<Held> held_;
  std::uint64_t accepted_ = 0;  // stream bytes taken by trySendTwo
  std::uint64_t zeroCopyBytes_ = 0;
  std::vector<std::uint64_t> refusedRanges_;  // program buffers the device would not register (ids)
  std::uint64_t userRegistrationsMade_ = 0;
};

class CreditRecvStream final : public ByteStream {
 public:
  // `first`, and as many more from `more` as the sender uses (none: the
  // sender must use one).
  CreditRecvStream(std::unique_ptr<QueuePair> first, const QueuePairFactory& more, Socket lifeline,
                   std::string peerName, const CreditGeometry& geometry, const Deadline& deadline);
  std::size_t trySendTwo(const void*, std::size_t, const void*, std::size_t) override { return 0; }
  std::size_t tryRecvTwo(void* first, std::size_t firstBytes, void* second, std::size_t secondBytes) override;
  pollfd pollEntry(bool sending) const override;
  void checkAlive() override;

 private:
  void reap();                  // receive completions: filled slots, in order
  // Grants `slot` once queue pair 0's send queue has room for the credit
  // write (a grant's entry is free again only once its completion has been
  // polled, which may lag the data it let in): in order, the rest waiting.
  void grant(std::size_t slot);
  void postWaitingGrants();
  void postGrant(std::size_t slot);  // posts a receive, then writes the credit
  // Waits (without blocking) for the sender's "ready", then grants every
  // slot; true once done.
  bool finishSetup();

  // Registered memory before the queue pairs, for the sender's reason.
  std::uint64_t memoryOwner_ = newMemoryOwner();  // as the sender's
  std::vector<char> slots_;
  std::vector<CreditRecord> grants_;  // the source of each credit write
  std::vector<std::unique_ptr<QueuePair>> qps_;
  CompletionWait completionWait_;  // over qps_
  bool granting_ = false;
  Socket lifeline_;
  std::string peer_;
  CreditGeometry geometry_;
  std::vector<Region> slotsRegions_;  // per queue pair
  Region grantsRegion_;                // on queue pair 0
  RemoteMemory peerRing_;
  std::uint64_t nextGrant_ = 1;
  std::deque<std::size_t> granted_;   // slots granted and not yet handed out, in grant order
  std::deque<std::size_t> grantsWaiting_;  // drained slots not granted yet, in order
  std::size_t grantsInFlight_ = 0;         // credit writes not yet completed
  std::vector<long> arrived_;         // per slot: bytes that came, -1 while none
  struct Filled {
    std::size_t slot;
    std::size_t bytes;
    std::size_t read;
  };
  std::deque<Filled> filled_;
  // The first completion that failed, if one did. A sender may finish and
  // close its end (ncclCommDestroy) while this side still drains the last
  // slots it filled; the grant that follows a drained slot then fails (over
  // libfabric's tcp provider at once, with EPIPE), and on a verbs-like
  // device the receives posted after it are flushed. None of that is an
  // error until the stream needs bytes that are not there: slots filled
  // before the failure are still handed out. From then on no slot is
  // granted again.
  std::optional<Completion> failed_;
};

}  // namespace hora::transport::rdma
