#include "transport/rdma/credit_stream.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "base/error.h"
#include "base/log.h"

namespace hora::transport::rdma {

const char* statusName(Status status) {
  switch (status) {
    case Status::Success: return "success";
    case Status::RemoteAccessError: return "remote access error (bad key, bounds or rights)";
    case Status::ReceiverNotReady: return "receiver not ready (no receive posted)";
    case Status::Flushed: return "flushed (the queue pair had failed before)";
    case Status::RetryExceeded: return "transport retries exceeded (the peer stopped answering)";
    case Status::LocalError: return "local error";
  }
  return "?";
}

namespace {
// Up to 2^8 slots of up to 2^24 bytes.
constexpr std::uint32_t kSlotBits = 8;
constexpr std::uint32_t kByteBits = 24;
constexpr std::size_t kMaxCompletions = 16;

void checkGeometry(const CreditGeometry& geometry) {
  HORA_CHECK_ARG(geometry.slots >= 1 && geometry.slots <= (1u << kSlotBits), "RDMA: ", geometry.slots,
                 " slots; 1 to ", 1u << kSlotBits, " are possible");
  HORA_CHECK_ARG(geometry.slotBytes >= 64 && geometry.slotBytes < (1u << kByteBits), "RDMA: slots of ",
                 geometry.slotBytes, " bytes; 64 B to 16 MiB are possible");
}

// Set-up messages over the lifeline: a queue pair's address, length first.
void sendAddress(Socket& lifeline, const std::vector<char>& address, const Deadline& deadline,
                 const std::string& peer) {
  const auto length = static_cast<std::uint32_t>(address.size());
  lifeline.sendAll(&length, sizeof(length), deadline, nullptr, peer);
  lifeline.sendAll(address.data(), address.size(), deadline, nullptr, peer);
}

std::vector<char> recvAddress(Socket& lifeline, const Deadline& deadline, const std::string& peer) {
  std::uint32_t length = 0;
  lifeline.recvAll(&length, sizeof(length), deadline, nullptr, peer);
  HORA_ENFORCE(length <= 4096, "RDMA: ", peer, " sent a queue pair address of ", length, " bytes");
  std::vector<char> address(length);
  lifeline.recvAll(address.data(), address.size(), deadline, nullptr, peer);
  return address;
}

// The lifeline carries nothing after set-up: readable means closed.
void checkLifeline(const Socket& lifeline, const std::string& peer) {
  pollfd entry{lifeline.fd(), POLLIN | POLLRDHUP, 0};
  if (::poll(&entry, 1, 0) > 0 && entry.revents != 0)
    fail(ErrorKind::Remote, "RDMA peer ", peer, " closed its connection: ", kPeerClosedCause);
}

[[noreturn]] void failCompletion(const Completion& completion, const std::string& peer) {
  const char* what = completion.operation == Operation::Receive              ? "receive"
                     : completion.operation == Operation::WriteWithImmediate ? "write with immediate"
                                                                              : "write";
  fail(completion.status == Status::LocalError ? ErrorKind::System : ErrorKind::Remote, "RDMA ", what, " with ",
       peer, " failed: ", statusName(completion.status));
}
}  // namespace

std::uint32_t packImmediate(std::size_t slot, std::size_t bytes) {
  return static_cast<std::uint32_t>(slot << kByteBits | bytes);
}

void unpackImmediate(std::uint32_t immediate, std::size_t& slot, std::size_t& bytes) {
  slot = immediate >> kByteBits;
  bytes = immediate & ((1u << kByteBits) - 1);
}

// ---------------------------------------------------------------- sender

CreditSendStream::CreditSendStream(std::vector<std::unique_ptr<QueuePair>> queuePairs, Socket lifeline,
                                   std::string peerName, const CreditGeometry& geometry, const Deadline& deadline,
                                   std::shared_ptr<const UserRegistrations> registrations)
    : ring_(geometry.slots),
      staging_(geometry.slots * geometry.slotBytes),
      qps_(std::move(queuePairs)),
      completionWait_(qps_),
      lifeline_(std::move(lifeline)),
      peer_(std::move(peerName)),
      geometry_(geometry),
      stagingBusy_(geometry.slots, false),
      inFlight_(qps_.size(), 0),
      registrations_(std::move(registrations)),
      held_(geometry.slots) {
  checkGeometry(geometry);
  HORA_CHECK_ARG(!qps_.empty() && qps_.size() <= kMaxQueuePairsPerConnection, "RDMA: ", qps_.size(),
                 " queue pairs per connection; 1 to ", kMaxQueuePairsPerConnection, " are possible");
  for (auto& qp : qps_)  // a send is a write and a write with immediate
    HORA_ENFORCE(qp->sendQueueDepth() >= 2, "RDMA: a send queue of ", qp->sendQueueDepth(),
                 " requests; a send takes 2");
  // The receiver writes its grants into the ring; the staging is only read.
  ringRegion_ =
      qps_[0]->registerMemory(ring_.data(), ring_.size() * sizeof(CreditRecord), memoryOwner_, Access::RemoteWrite);
  for (auto& qp : qps_)
    stagingRegions_.push_back(qp->registerMemory(staging_.data(), staging_.size(), memoryOwner_, Access::LocalRead));
  // Ours: how many queue pairs, their addresses, and where the credits go.
  // Theirs comes later.
  const auto count = static_cast<std::uint32_t>(qps_.size());
  lifeline_.sendAll(&count, sizeof(count), deadline, nullptr, peer_);
  for (auto& qp : qps_) sendAddress(lifeline_, qp->address(), deadline, peer_);
  const RemoteMemory ring{ringRegion_.remoteAt(0), ringRegion_.remoteKey};
  lifeline_.sendAll(&ring, sizeof(ring), deadline, nullptr, peer_);
}

CreditSendStream::~CreditSendStream() { flushOnClose(); }

bool CreditSendStream::writesInFlight() const {
  return std::any_of(inFlight_.begin(), inFlight_.end(), [](std::size_t n) { return n > 0; });
}

void CreditSendStream::flushOnClose() noexcept {
  // Long enough for any live fabric (a write completes in microseconds),
  // short enough that closing past a peer whose host died is not held up.
  constexpr auto kCloseFlushTime = std::chrono::seconds(1);
  const auto until = std::chrono::steady_clock::now() + kCloseFlushTime;
  try {
    while (!completionFailed_ && writesInFlight() && std::chrono::steady_clock::now() < until) {
      reap();
      checkLifeline(lifeline_, peer_);
      std::this_thread::yield();
    }
  } catch (const std::exception&) {
    // The peer is gone or a write failed: what is still queued never lands.
  }
}

bool CreditSendStream::finishSetup() {
  if (connected_) return true;
  char chunk[4096];
  const std::size_t got = lifeline_.tryRecv(chunk, sizeof(chunk), peer_);
  answer_.insert(answer_.end(), chunk, chunk + got);
  // The receiver's addresses, each its length then its bytes: all of them?
  std::vector<std::vector<char>> addresses;
  std::size_t at = 0;
  while (addresses.size() < qps_.size()) {
    std::uint32_t length = 0;
    if (answer_.size() - at < sizeof(length)) return false;
    std::memcpy(&length, answer_.data() + at, sizeof(length));
    HORA_ENFORCE(length > 0 && length <= 4096, "RDMA: ", peer_, " sent a queue pair address of ", length, " bytes");
    if (answer_.size() - at - sizeof(length) < length) return false;
    at += sizeof(length);
    addresses.emplace_back(answer_.begin() + static_cast<long>(at), answer_.begin() + static_cast<long>(at + length));
    at += length;
  }
  for (std::size_t q = 0; q < qps_.size(); ++q) qps_[q]->connect(addresses[q]);
  const char ready = 1;
  lifeline_.sendAll(&ready, 1, Deadline::after(std::chrono::seconds(10)), nullptr, peer_);
  connected_ = true;
  return true;
}

void CreditSendStream::reap() {
  Completion done[kMaxCompletions];
  for (std::size_t q = 0; q < qps_.size(); ++q) {
    for (;;) {
      const std::size_t n = qps_[q]->poll(done, kMaxCompletions);
      for (std::size_t i = 0; i < n; ++i) {
        if (done[i].status != Status::Success) {
          completionFailed_ = true;  // the rest of this batch is dropped with the stream
          failCompletion(done[i], peer_);
        }
        // A write with immediate completes after the write before it: the
        // staging slot both read from is free again.
        if (done[i].operation == Operation::WriteWithImmediate) {
          const std::size_t slot = done[i].id;
          stagingBusy_[slot] = false;
          --inFlight_[q];
          if (held_[slot].region != nullptr) {
            --held_[slot].region->writesInFlight;
            held_[slot].region = nullptr;
          }
        }
      }
      if (n < kMaxCompletions) break;
    }
  }
}

std::size_t CreditSendStream::heldBytes() const {
  std::optional<std::uint64_t> oldest;
  for (const Held& slot : held_)
    if (slot.region != nullptr && (!oldest || slot.from < *oldest)) oldest = slot.from;
  return oldest ? static_cast<std::size_t>(accepted_ - *oldest) : 0;
}

void CreditSendStream::releaseDeregistered() {
  const std::uint64_t generation = registrations_->generation();
  if (generation != registrationsSeen_) {
    registrationsSeen_ = generation;
    for (UserRegion& region : userRegions_)
      if (!region.deregistered && !registrations_->live(region.range.id)) region.deregistered = true;
  }
  for (auto region = userRegions_.begin(); region != userRegions_.end();) {
    if (!region->deregistered || region->writesInFlight > 0) {
      ++region;
      continue;
    }
    for (std::size_t q = 0; q < qps_.size(); ++q) qps_[q]->deregisterMemory(region->perQueuePair[q]);
    region = userRegions_.erase(region);
  }
}

CreditSendStream::UserRegion* CreditSendStream::userRegionFor(const char* data, std::size_t bytes) {
  if (!registrations_) return nullptr;
  releaseDeregistered();
  for (UserRegion& region : userRegions_)
    if (!region.deregistered && region.range.holds(data, bytes)) return &region;
  const std::optional<UserRegistrations::Range> range = registrations_->find(data, bytes);
  if (!range) return nullptr;
  for (std::uint64_t refused : refusedRanges_)
    if (refused == range->id) return nullptr;
  UserRegion region;
  region.range = *range;
  // For local reads only: the program's buffer is the source of this
  // side's writes, and no peer may write into it.
  try {
    for (auto& qp : qps_)
      region.perQueuePair.push_back(
          qp->registerMemory(const_cast<char*>(range->base), range->bytes, range->id, Access::LocalRead));
  } catch (const Error& error) {
    // The device refused (the locked-memory limit, pages it cannot pin):
    // the buffer's bytes go through staging, as an unregistered one's.
    for (std::size_t q = 0; q < region.perQueuePair.size(); ++q) qps_[q]->deregisterMemory(region.perQueuePair[q]);
    refusedRanges_.push_back(range->id);
    HORA_LOG(Info, "RDMA to ", peer_, ": a registered buffer of ", range->bytes,
             " bytes is sent through staging: the device refused to register it: ", error.what());
    return nullptr;
  }
  ++userRegistrationsMade_;
  userRegions_.push_back(std::move(region));
  return &userRegions_.back();
}

bool CreditSendStream::nextCreditArrived() const {
  // The receiver's write of the record lands before its sequence does.
  const CreditRecord& credit = ring_[(nextSequence_ - 1) % geometry_.slots];
  return std::atomic_ref<const std::uint64_t>(credit.sequence).load(std::memory_order_acquire) == nextSequence_;
}

std::size_t CreditSendStream::trySendTwo(const void* first, std::size_t firstBytes, const void* second,
                                         std::size_t secondBytes) {
  if (!finishSetup()) return 0;
  reap();
  if (firstBytes + secondBytes == 0) return 0;
  const std::size_t index = (nextSequence_ - 1) % geometry_.slots;
  const std::size_t q = (nextSequence_ - 1) % qps_.size();
  const CreditRecord& credit = ring_[index];
  if (!nextCreditArrived() || stagingBusy_[index]) return 0;
  // A send takes two requests on the send queue until its completion.
  if ((inFlight_[q] + 1) * 2 > qps_[q]->sendQueueDepth()) return 0;
  const std::size_t room = std::min<std::size_t>(credit.bytes, geometry_.slotBytes);
  // Without a copy when the slot's bytes all come from one registered
  // program buffer (the first buffer, or the second when the first is
  // empty).
  const char* direct = static_cast<const char*>(firstBytes > 0 ? first : second);
  const std::size_t directBytes = std::min(firstBytes > 0 ? firstBytes : secondBytes, room);
  std::size_t bytes = 0;
  if (UserRegion* region = userRegionFor(direct, directBytes)) {
    const std::size_t offset = static_cast<std::size_t>(direct - region->range.base);
    qps_[q]->postWrite(region->perQueuePair[q], offset, directBytes, {credit.address, credit.key}, index,
                       /*signaled=*/false);
    bytes = directBytes;
    held_[index] = {region, accepted_};
    ++region->writesInFlight;
    zeroCopyBytes_ += bytes;
  } else {
    char* stage = staging_.data() + index * geometry_.slotBytes;
    const std::size_t fromFirst = std::min(firstBytes, room);
    const std::size_t fromSecond = std::min(secondBytes, room - fromFirst);
    std::memcpy(stage, first, fromFirst);
    if (fromSecond > 0) std::memcpy(stage + fromFirst, second, fromSecond);
    bytes = fromFirst + fromSecond;
    qps_[q]->postWrite(stagingRegions_[q], index * geometry_.slotBytes, bytes, {credit.address, credit.key}, index,
                       /*signaled=*/false);
  }
  qps_[q]->postWriteWithImmediate(packImmediate(credit.slot, bytes), index);
  stagingBusy_[index] = true;
  ++inFlight_[q];
  ++nextSequence_;
  accepted_ += bytes;
  return bytes;
}

pollfd CreditSendStream::pollEntry(bool) const {
  if (!connected_) return {lifeline_.fd(), POLLIN, 0};  // the receiver's answer
  // A credit arrives as a plain RDMA write into the ring, which completes
  // nothing here and wakes no completion channel: a sender waiting for one
  // looks again soon instead of sleeping until the wait's slice ends.
  if (!nextCreditArrived()) return {-1, POLLIN, 0};
  return completionWait_.entry(qps_);
}

void CreditSendStream::checkAlive() {
  if (connected_) checkLifeline(lifeline_, peer_);
}

// ---------------------------------------------------------------- receiver

CreditRecvStream::CreditRecvStream(std::unique_ptr<QueuePair> first, const QueuePairFactory& more, Socket lifeline,
                                   std::string peerName, const CreditGeometry& geometry, const Deadline& deadline)
    : slots_(geometry.slots * geometry.slotBytes),
      grants_(geometry.slots),
      lifeline_(std::move(lifeline)),
      peer_(std::move(peerName)),
      geometry_(geometry),
      arrived_(geometry.slots, -1) {
  checkGeometry(geometry);
  std::uint32_t count = 0;
  lifeline_.recvAll(&count, sizeof(count), deadline, nullptr, peer_);
  HORA_ENFORCE(count >= 1 && count <= kMaxQueuePairsPerConnection, "RDMA: ", peer_, " uses ", count,
               " queue pairs per connection; 1 to ", kMaxQueuePairsPerConnection, " are possible");
  HORA_ENFORCE(count == 1 || more, "RDMA: ", peer_, " uses ", count,
               " queue pairs per connection, and this end can make only one");
  qps_.push_back(std::move(first));
  while (qps_.size() < count) qps_.push_back(more());
  for (auto& qp : qps_) {
    // A receive per granted slot; credit writes wait for send-queue room.
    HORA_ENFORCE(qp->sendQueueDepth() >= 1 && qp->receiveQueueDepth() >= geometry.slots,
                 "RDMA: queues too short for ", geometry.slots, " slots");
    slotsRegions_.push_back(qp->registerMemory(slots_.data(), slots_.size(), memoryOwner_, Access::RemoteWrite));
  }
  // The grants are the source of this side's credit writes.
  grantsRegion_ =
      qps_[0]->registerMemory(grants_.data(), grants_.size() * sizeof(CreditRecord), memoryOwner_, Access::LocalRead);
  std::vector<std::vector<char>> theirs;
  for (std::uint32_t q = 0; q < count; ++q) theirs.push_back(recvAddress(lifeline_, deadline, peer_));
  lifeline_.recvAll(&peerRing_, sizeof(peerRing_), deadline, nullptr, peer_);
  for (auto& qp : qps_) sendAddress(lifeline_, qp->address(), deadline, peer_);
  for (std::size_t q = 0; q < qps_.size(); ++q) qps_[q]->connect(theirs[q]);
  completionWait_ = CompletionWait(qps_);
}

bool CreditRecvStream::finishSetup() {
  if (granting_) return true;
  char ready = 0;
  if (lifeline_.tryRecv(&ready, 1, peer_) == 0) return false;
  granting_ = true;
  for (std::size_t slot = 0; slot < geometry_.slots; ++slot) grant(slot);
  return true;
}

void CreditRecvStream::grant(std::size_t slot) {
  grantsWaiting_.push_back(slot);
  postWaitingGrants();
}

void CreditRecvStream::postWaitingGrants() {
  while (!grantsWaiting_.empty() && grantsInFlight_ < qps_[0]->sendQueueDepth()) {
    postGrant(grantsWaiting_.front());
    grantsWaiting_.pop_front();
  }
}

void CreditRecvStream::postGrant(std::size_t slot) {
  if (failed_) return;  // the sender's end is gone: nothing more will come
  const std::size_t index = (nextGrant_ - 1) % geometry_.slots;
  const std::size_t q = (nextGrant_ - 1) % qps_.size();
  // The receive first: the sender's write with immediate may follow at once.
  qps_[q]->postReceive(slot);
  CreditRecord& record = grants_[index];
  record.address = slotsRegions_[q].remoteAt(slot * geometry_.slotBytes);
  record.key = slotsRegions_[q].remoteKey;
  record.bytes = static_cast<std::uint32_t>(geometry_.slotBytes);
  record.slot = static_cast<std::uint32_t>(slot);
  record.sequence = nextGrant_;
  qps_[0]->postWrite(grantsRegion_, index * sizeof(CreditRecord), sizeof(CreditRecord),
                     {peerRing_.address + index * sizeof(CreditRecord), peerRing_.key}, index, /*signaled=*/true);
  ++grantsInFlight_;
  granted_.push_back(slot);
  ++nextGrant_;
}

void CreditRecvStream::reap() {
  Completion done[kMaxCompletions];
  for (auto& qp : qps_) {
    for (;;) {
      const std::size_t n = qp->poll(done, kMaxCompletions);
      for (std::size_t i = 0; i < n; ++i) {
        if (done[i].operation != Operation::Receive) --grantsInFlight_;  // a grant's write ended
        if (done[i].status != Status::Success) {
          // Deferred (see failed_): a failed grant, or a receive flushed
          // after it, hands out no bytes; the slots before it still do.
          if (!failed_) failed_ = done[i];
          continue;
        }
        if (done[i].operation != Operation::Receive) continue;  // a grant went out
        std::size_t slot = 0, bytes = 0;
        unpackImmediate(done[i].immediate, slot, bytes);
        HORA_ENFORCE(slot < geometry_.slots && bytes <= geometry_.slotBytes && arrived_[slot] < 0, "RDMA: ", peer_,
                     " announced ", bytes, " bytes in slot ", slot);
        arrived_[slot] = static_cast<long>(bytes);
      }
      if (n < kMaxCompletions) break;
    }
  }
  postWaitingGrants();
  // Slots are handed out in the order they were granted, which is the
  // order the sender filled them in, whichever queue pair came first.
  while (!granted_.empty() && arrived_[granted_.front()] >= 0) {
    const std::size_t slot = granted_.front();
    filled_.push_back({slot, static_cast<std::size_t>(arrived_[slot]), 0});
    arrived_[slot] = -1;
    granted_.pop_front();
  }
}

std::size_t CreditRecvStream::tryRecvTwo(void* first, std::size_t firstBytes, void* second,
                                         std::size_t secondBytes) {
  if (!finishSetup()) return 0;
  reap();
  std::size_t moved = 0;
  auto fill = [&](char* into, std::size_t want) {
    std::size_t got = 0;
    while (got < want && !filled_.empty()) {
      Filled& front = filled_.front();
      const std::size_t n = std::min(want - got, front.bytes - front.read);
      std::memcpy(into + got, slots_.data() + front.slot * geometry_.slotBytes + front.read, n);
      front.read += n;
      got += n;
      if (front.read == front.bytes) {
        const std::size_t slot = front.slot;
        filled_.pop_front();
        grant(slot);
      }
    }
    return got;
  };
  moved += fill(static_cast<char*>(first), firstBytes);
  if (moved == firstBytes && second != nullptr) moved += fill(static_cast<char*>(second), secondBytes);
  // Bytes wanted, none here, and the sender can no longer be given a slot
  // to send them in: now the failure is the stream's error.
  if (moved == 0 && firstBytes + secondBytes > 0 && failed_) failCompletion(*failed_, peer_);
  return moved;
}

pollfd CreditRecvStream::pollEntry(bool) const {
  if (!granting_) return {lifeline_.fd(), POLLIN, 0};  // the sender's "ready"
  return completionWait_.entry(qps_);
}

void CreditRecvStream::checkAlive() {
  if (granting_) checkLifeline(lifeline_, peer_);
}

}  // namespace hora::transport::rdma
