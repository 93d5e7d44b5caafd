#include "transport/shm/shm_connection.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "kernels/copy_host.h"
#include "protocols/host_fifo.h"

namespace hora::transport {

using protocols::HostOrdering;
static_assert(kOpStampWords == protocols::kStampWords, "a stamp fills an entry of the stamps board");

namespace {
struct SegmentOffer {
  std::int32_t pid;
  std::int32_t fd;
  std::uint64_t bytes;
  std::uint64_t probeAddress;  // the segment in the sender: a readable word
  std::uint64_t device;        // the segment's memfd identity, which the
  std::uint64_t inode;         //   receiver checks (peer_file.h)
};

// The receiver's answer.
constexpr char kAckReadsSender = 1;
constexpr char kAckCopyOnly = 2;
// Where padding "comes from" and "goes to": a skipped piece is never read
// or written, but a posted piece needs an address.
const char kNoBytesOut[kMaxStreamAlignment] = {};
char noBytesIn[kMaxStreamAlignment];

// Bytes that bring `position` to a multiple of `alignment`.
std::size_t paddingFor(std::uint64_t position, std::size_t alignment) {
  HORA_ENFORCE(alignment > 0 && alignment <= kMaxStreamAlignment, "stream alignment ", alignment);
  return (alignment - position % alignment) % alignment;
}

ShmRoute routeFor(protocols::Protocol protocol) {
  return protocol == protocols::Protocol::LL ? ShmRoute::LL : ShmRoute::Simple;
}

char* alignedStart(std::vector<char>& storage) {
  const auto at = reinterpret_cast<std::uintptr_t>(storage.data());
  return storage.data() + (kMaxStreamAlignment - at % kMaxStreamAlignment) % kMaxStreamAlignment;
}

void checkLifeline(Socket& lifeline, const std::string& peer) {
  char byte;
  ssize_t n = ::recv(lifeline.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
    fail(ErrorKind::Remote, "shared-memory peer ", peer,
         " closed its connection: ", kPeerClosedCause);
}

bool readRemote(pid_t pid, void* dst, std::uint64_t address, std::size_t bytes) {
  iovec local{dst, bytes};
  iovec remote{reinterpret_cast<void*>(address), bytes};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(bytes);
}

bool plausible(const ShmGeometry& g) {
  auto fine = [](std::uint64_t slotBytes, std::uint64_t slots) {
    return slotBytes != 0 && slotBytes % protocols::kSlotGranule == 0 && slots != 0 &&
           slotBytes <= (1ull << 30) && slots <= (1ull << 20);
  };
  return fine(g.slotBytes, g.slotCount) && fine(g.llSlotBytes, g.llSlotCount);
}
}  // namespace

std::unique_ptr<ShmSendConnection> connectShmSender(Socket lifeline, std::string peerName,
                                                    const ShmOptions& options,
                                                    const Deadline& deadline,
                                                    const std::atomic<bool>* abort, bool busy) {
  const std::size_t page = ShmSegment::pageBytes();
  const ShmGeometry geometry = shmGeometry(options.fifoBytes, options.sliceBytes);
  const ShmSegmentLayout layout = shmSegmentLayout(geometry, page);
  ShmSegment segment = ShmSegment::create(layout.totalBytes);
  char* base = static_cast<char*>(segment.data());
  auto* header = new (base) ShmSegmentHeader();
  header->magic = ShmSegmentHeader::kMagic;
  header->geometry = geometry;
  header->wakesSleepers = options.wakeSleepers ? 1 : 0;
  // A new shared-memory file reads as zero (host_fifo.h); writing the
  // slots anyway is what allocates their pages.
  protocols::initFifo(base + layout.simpleOffset, layout.llOffset - layout.simpleOffset,
                      geometry.slotBytes, geometry.slotCount,
                      busy ? protocols::BlockIsZero::No : protocols::BlockIsZero::Yes);
  protocols::initFifo(base + layout.llOffset, layout.totalBytes - layout.llOffset,
                      geometry.llSlotBytes, geometry.llSlotCount, protocols::BlockIsZero::Yes);
  SegmentOffer offer{static_cast<std::int32_t>(getpid()),
                     segment.fd(),
                     segment.size(),
                     reinterpret_cast<std::uint64_t>(segment.data()),
                     segment.identity().device,
                     segment.identity().inode};
  lifeline.sendAll(&offer, sizeof(offer), deadline, abort, peerName);
  return std::make_unique<ShmSendConnection>(std::move(segment), std::move(lifeline),
                                             std::move(peerName));
}

std::unique_ptr<ShmRecvConnection> acceptShmReceiver(Socket lifeline, std::string peerName,
                                                     const Deadline& deadline,
                                                     const std::atomic<bool>* abort) {
  SegmentOffer offer{};
  lifeline.recvAll(&offer, sizeof(offer), deadline, abort, peerName);
  const std::size_t page = ShmSegment::pageBytes();
  if (offer.bytes < page || offer.bytes % page != 0)
    fail(ErrorKind::Internal, "the shared-memory segment of ", peerName, " has ", offer.bytes,
         " bytes, not whole pages");
  ShmSegment segment =
      ShmSegment::openPeer(offer.pid, offer.fd, {offer.device, offer.inode}, offer.bytes,
                           "; set NCCL_SHM_DISABLE=1 to use TCP");
  const auto* header = static_cast<const ShmSegmentHeader*>(segment.data());
  if (header->magic != ShmSegmentHeader::kMagic || !plausible(header->geometry) ||
      shmSegmentLayout(header->geometry, page).totalBytes != offer.bytes)
    fail(ErrorKind::Internal, "the shared-memory segment of ", peerName,
         " has no header of this version of hora");
  std::uint64_t magic = 0;
  const bool readsSender =
      offer.pid == getpid() || (readRemote(offer.pid, &magic, offer.probeAddress, sizeof(magic)) &&
                                magic == ShmSegmentHeader::kMagic);
  const char ack = readsSender ? kAckReadsSender : kAckCopyOnly;
  lifeline.sendAll(&ack, 1, deadline, abort, peerName);
  return std::make_unique<ShmRecvConnection>(std::move(segment), std::move(lifeline),
                                             std::move(peerName), offer.pid, readsSender);
}

// ------------------------------------------------------------------ sender

ShmSendConnection::ShmSendConnection(ShmSegment segment, Socket lifeline, std::string peerName)
    : segment_(std::move(segment)),
      header_(static_cast<ShmSegmentHeader*>(segment_.data())),
      wakes_(header_->wakesSleepers != 0),
      simple_(simpleFifoAt(segment_.data(), header_->geometry, ShmSegment::pageBytes())),
      ll_(llFifoAt(segment_.data(), header_->geometry, ShmSegment::pageBytes())),
      lifeline_(std::move(lifeline)),
      peer_(std::move(peerName)),
      llStaging_(kShmLLMaxBytes + kMaxStreamAlignment),
      llOut_(alignedStart(llStaging_)) {}

bool ShmSendConnection::publishStampsAlone() {
  while (stampDue() && stamps_.front().alone) {
    char* slot = nullptr;
    if (!simple_.tryRoom(&slot)) return false;
    publishSimple(0);  // the stamp alone
  }
  return true;
}

void ShmSendConnection::stampLeft() {
  stamps_.pop_front();
  --stampsOutstanding_;
}

void ShmSendConnection::publishSimple(std::size_t bytes) {
  if (!stampDue()) {
    simple_.publish(bytes);
  } else {
    simple_.publishStamped(bytes, stamps_.front().stamp.words.data(), stamps_.front().stamp.check);
    stampLeft();
  }
  wakeReceiver();
}

bool ShmSendConnection::llRoomFor(std::size_t bytes) {
  return stampDue() ? ll_.tryStampRoom(protocols::llStampedMessageLines(bytes))
                    : ll_.tryRoom(protocols::llMessageLines(bytes));
}

bool ShmSendConnection::sendLL(const char* data, std::size_t bytes) {
  if (!llRoomFor(bytes)) return false;
  // Simple slots published before these lines are visible to a receiver
  // that saw one of the lines (host_ordering.h); sendStamped fences too.
  if (!stampDue()) {
    HostOrdering::fenceRelease();
    ll_.send(data, bytes, protocols::kNoDeadline);  // cannot wait: the room is there
  } else {
    const OpStamp& stamp = stamps_.front().stamp;
    ll_.sendStamped(data, bytes, stamp.words.data(), static_cast<std::uint32_t>(stamp.check));
    stampLeft();
  }
  wakeReceiver();
  return true;
}

std::size_t ShmSendConnection::moveOut(const char* data, std::size_t bytes) {
  const ShmRoute route = routes_.at(queue_.completed());
  if (route == ShmRoute::Skip) return bytes;
  // Stamps of operations that sent nothing leave first, alone.
  if (stampDue() && stamps_.front().alone && !publishStampsAlone()) return 0;
  if (route == ShmRoute::LL) {
    const std::size_t n = std::min(bytes, kShmLLMaxBytes);
    return sendLL(data, n) ? n : 0;
  }
  char* slot = nullptr;
  if (!simple_.tryRoom(&slot)) return 0;
  const std::size_t n = std::min<std::size_t>(bytes, header_->geometry.slotBytes);
  kernels::copyToPublish(slot, data, n, streamsCopies());
  publishSimple(n);
  return n;
}

bool ShmSendConnection::progress() {
  if (awaitingAck_) collectAck();
  bool moved = queue_.drain([&](const char* data, std::size_t bytes) { return moveOut(data, bytes); });
  if (queue_.empty() && stampDue()) {
    const std::size_t before = stamps_.size();
    publishStampsAlone();
    moved |= stamps_.size() != before;
  }
  return moved;
}

std::span<char> ShmSendConnection::writable(std::size_t maxBytes) {
  if (!queue_.empty()) return {};  // posted bytes go first
  writableRoute_ = routes_.latest();
  // Stamps of operations that sent nothing leave first, alone.
  if (stampDue() && stamps_.front().alone && !publishStampsAlone()) {
    wantsRoom_ = true;
    return {};
  }
  std::span<char> room;
  if (writableRoute_ == ShmRoute::LL) {
    const std::size_t bytes = std::min(maxBytes, kShmLLMaxBytes);
    if (llRoomFor(bytes)) room = {llOut_, bytes};
  } else {
    char* slot = nullptr;
    if (simple_.tryRoom(&slot)) room = {slot, std::min<std::size_t>(maxBytes, header_->geometry.slotBytes)};
  }
  wantsRoom_ = room.size() < maxBytes;
  spanOut_ = !room.empty();
  return room;
}

void ShmSendConnection::commitWritten(std::size_t bytes) {
  wantsRoom_ = false;
  spanOut_ = false;
  if (bytes == 0) return;
  if (writableRoute_ == ShmRoute::LL) {
    HORA_ENFORCE(bytes <= kShmLLMaxBytes, "committing more than writable() gave to ", peer_);
    const bool sent = sendLL(llOut_, bytes);  // writable() found the room
    HORA_ENFORCE(sent, "the LL room writable() found for ", peer_, " is gone");
  } else {
    HORA_ENFORCE(bytes <= header_->geometry.slotBytes, "committing more than writable() gave to ",
                 peer_);
    publishSimple(bytes);
  }
  queue_.countMoved(bytes);
}

void ShmSendConnection::alignStream(std::size_t alignment) {
  const std::size_t padding = paddingFor(postedBytes(), alignment);
  if (padding == 0) return;
  if (queue_.empty()) {
    queue_.countMoved(padding);  // nothing to move, nothing before it
    return;
  }
  const ShmRoute route = routes_.latest();
  routes_.switchAt(queue_.posted(), ShmRoute::Skip);
  queue_.post(kNoBytesOut, padding);  // not post(): padding carries no stamp
  routes_.switchAt(queue_.posted(), route);
}

void ShmSendConnection::beginMessage(protocols::Protocol protocol, const OpStamp* stamp) {
  const std::uint64_t at = queue_.posted();
  routes_.switchAt(at, routeFor(protocol));
  if (stamp == nullptr) return;
  // The previous operation flushed its stamp (core/host_primitives.h).
  HORA_ENFORCE(stamps_.empty() || stamps_.back().alone || bytesFollow_,
               "an operation's stamp for ", peer_, " was never sent");
  stamps_.push_back({*stamp, at, false});
  ++stampsOutstanding_;
  bytesFollow_ = false;
}

void ShmSendConnection::flushStamp() {
  // Bytes posted or being written carry the stamp; otherwise it goes alone.
  if (stamps_.empty() || stamps_.back().alone || spanOut_ || (bytesFollow_ && !queue_.empty())) return;
  stamps_.back().alone = true;
  progress();
}

PeerMemoryAccess ShmSendConnection::peerMemoryAccess() {
  if (awaitingAck_) collectAck();
  if (awaitingAck_) return PeerMemoryAccess::Unknown;
  return peerReadsUs_ ? PeerMemoryAccess::Yes : PeerMemoryAccess::No;
}

pollfd ShmSendConnection::pollEntry() const { return {idle() ? -1 : lifeline_.fd(), POLLIN, 0}; }

void ShmSendConnection::collectAck() {
  char ack;
  if (lifeline_.tryRecv(&ack, 1, peer_) == 1) {
    segment_.closeDescriptor();
    awaitingAck_ = false;
    peerReadsUs_ = ack == kAckReadsSender;
  }
}

void ShmSendConnection::checkAlive() {
  if (awaitingAck_) collectAck();
  if (awaitingAck_) return;  // the receiver has not even mapped the FIFO yet
  // A receiver that took everything we sent may leave: nothing is lost.
  // Not while a stamp waits to go: the receiver must take that too (stamps
  // alone fill slots without counting as bytes).
  if (acknowledgedBytes() >= postedBytes() && stamps_.empty()) return;
  checkLifeline(lifeline_, peer_);
}

// ---------------------------------------------------------------- receiver

ShmRecvConnection::ShmRecvConnection(ShmSegment segment, Socket lifeline, std::string peerName,
                                     pid_t senderPid, bool readsSender)
    : segment_(std::move(segment)),
      header_(static_cast<ShmSegmentHeader*>(segment_.data())),
      wakes_(header_->wakesSleepers != 0),
      simple_(simpleFifoAt(segment_.data(), header_->geometry, ShmSegment::pageBytes())),
      ll_(llFifoAt(segment_.data(), header_->geometry, ShmSegment::pageBytes())),
      lifeline_(std::move(lifeline)),
      peer_(std::move(peerName)),
      llInboxStorage_(kShmLLMaxBytes + 2 * kMaxStreamAlignment),
      llInbox_(alignedStart(llInboxStorage_)),
      senderPid_(senderPid),
      senderIsUs_(senderPid == getpid()),
      readsSender_(readsSender) {}

void ShmRecvConnection::readPeerMemory(void* dst, std::uint64_t address, std::size_t bytes) {
  HORA_ENFORCE(readsSender_, "reading the memory of ", peer_, " is not allowed");
  if (senderIsUs_) {
    std::memcpy(dst, reinterpret_cast<const void*>(address), bytes);  // a rank of this process
    return;
  }
  if (!readRemote(senderPid_, dst, address, bytes))
    fail(ErrorKind::Remote, "reading ", bytes, " bytes from the memory of ", peer_, " failed: ",
         errnoText(errno), " (the peer process exited?)");
}

std::span<const char> ShmRecvConnection::simpleArrived() {
  if (!holdingSlot_) {
    if (!simple_.tryData(&slot_)) return {};
    // checkDueStamp() took any slot that begins an operation due here.
    if (slot_.stamped) [[unlikely]]
      failStamp(false, simpleSlotStamp());
    holdingSlot_ = true;
    slotRead_ = 0;
  }
  return {slot_.data + slotRead_, slot_.bytes - slotRead_};
}

std::optional<OpStamp> ShmRecvConnection::simpleSlotStamp() const {
  if (!slot_.stamped) return std::nullopt;
  OpStamp stamp;
  std::copy_n(slot_.stamp, kOpStampWords, stamp.words.begin());
  return stamp;
}

void ShmRecvConnection::failStamp(bool due, std::optional<OpStamp> arrived) {
  throw StampMismatch(peer_, due ? std::optional<OpStamp>(expected_.front().stamp) : std::nullopt, arrived);
}

void ShmRecvConnection::failLLMessage(std::uint32_t header, bool due) {
  if ((header & protocols::kLLStamped) == 0) failStamp(due, std::nullopt);
  // The board entry was written before the lines seen (ll.h).
  HostOrdering::fenceAcquire();
  OpStamp stamp;
  std::copy_n(ll_.stampEntry(llStampsTaken_), kOpStampWords, stamp.words.begin());
  failStamp(due, stamp);
}

ShmRoute ShmRecvConnection::nextByteRoute() {
  return queue_.empty() ? ShmRoute::Simple : routes_.movingAt(queue_.completed());
}

bool ShmRecvConnection::checkDueStamp(ShmRoute route) {
  // The operation's first bytes: nothing before them is left to read, unless
  // the peer sent more bytes of the previous operation than this rank took.
  if (holdingSlot_ || llLinesSeen_ != 0 || llInboxRead_ < llInboxBytes_) [[unlikely]]
    failStamp(true, std::nullopt);
  return route == ShmRoute::LL ? checkDueStampOnLL() : checkDueStampOnSimple();
}

bool ShmRecvConnection::checkDueStampOnSimple() {
  if (!simple_.tryData(&slot_)) {
    // Nothing on Simple. An LL message already there, with still nothing
    // on Simple once the fence has made visible every slot the sender
    // published before that message, means the peer's operation began on
    // LL: it is another operation.
    std::uint32_t header = 0;
    if (!ll_.tryLine(0, &header)) return false;
    HostOrdering::fenceAcquire();
    if (!simple_.tryData(&slot_)) failLLMessage(header, true);
  }
  // The check in the size word, not the board: no line more to load.
  if (!slot_.stamped || slot_.check != expected_.front().stamp.check) [[unlikely]]
    failStamp(true, simpleSlotStamp());
  takeSimpleStamp();
  return true;
}

void ShmRecvConnection::takeSimpleStamp() {
  dueStampChecked();
  if (slot_.bytes == 0) {
    simple_.release();  // the stamp alone
    wakeSender();
    return;
  }
  holdingSlot_ = true;
  slotRead_ = 0;
}

void ShmRecvConnection::dueStampChecked() {
  expected_.pop_front();
  --stampsOutstanding_;
}

bool ShmRecvConnection::checkDueStampOnLL() {
  // The stamp rides in the operation's first LL message (the check in the
  // line after the header, which came with it), or went alone in an empty
  // Simple slot ahead of the operation's LL bytes (a sender that had to
  // wait for a peer before it sent them).
  const std::uint64_t expected = expected_.front().stamp.check;
  auto takeAloneSlot = [&] {
    if (!slot_.stamped || slot_.bytes != 0 || slot_.check != expected) return false;
    takeSimpleStamp();
    return true;
  };
  std::uint32_t header = 0;
  if (!ll_.tryLine(0, &header)) {
    if (!simple_.tryData(&slot_)) return false;  // nothing has come yet
    // The acquire that found the slot made visible every line written
    // before it: with none, the peer's operation began on Simple.
    if (!ll_.tryLine(0, &header)) {
      if (takeAloneSlot()) return true;
      failStamp(true, simpleSlotStamp());
    }
  }
  if ((header & protocols::kLLStamped) != 0) {
    std::uint32_t check = 0;
    if (!ll_.tryLine(protocols::kLLCheckLine, &check)) return false;
    if (check == expected) {
      dueStampChecked();
      llStampChecked_ = true;
      return true;
    }
  }
  // Not in the LL message: a slot published before it is visible once
  // the fence pairs with the sender's (host_ordering.h).
  HostOrdering::fenceAcquire();
  if (simple_.tryData(&slot_) && takeAloneSlot()) return true;
  // An LL message that begins another operation, or bytes without a stamp.
  failLLMessage(header, true);
}

bool ShmRecvConnection::stampChecked() { return checkDueStamps(nextByteRoute()) && expected_.empty(); }

std::span<const char> ShmRecvConnection::llArrived() {
  if (llInboxRead_ < llInboxBytes_) return {llInbox_ + llInboxRead_, llInboxBytes_ - llInboxRead_};
  // Decode the next message as far as its lines have come; the lines stay
  // the sender's until the whole message is in, then go back at once.
  std::uint32_t word = 0;
  if (llLinesSeen_ == 0) {
    if (!ll_.tryLine(0, &word)) return {};
    const bool stamped = (word & protocols::kLLStamped) != 0;
    if (stamped && !llStampChecked_) [[unlikely]]
      failLLMessage(word, false);  // a stamp where none is due
    llStampChecked_ = false;
    const std::uint32_t bytes = word & ~protocols::kLLStamped;
    if (bytes == 0 || bytes > kShmLLMaxBytes)
      fail(ErrorKind::Internal, "an LL message of ", bytes, " bytes from ", peer_);
    llInboxBytes_ = bytes;
    llInboxRead_ = bytes;  // nothing readable until it is all there
    llDataLine_ = stamped ? protocols::kLLStampedDataLine : 1;
    llLinesSeen_ = llDataLine_;
  }
  const std::uint64_t dataEnd = llDataLine_ + (llInboxBytes_ + protocols::kLLDataBytes - 1) / protocols::kLLDataBytes;
  for (; llLinesSeen_ < dataEnd; ++llLinesSeen_) {
    if (!ll_.tryLine(llLinesSeen_, &word)) return {};
    std::memcpy(llInbox_ + (llLinesSeen_ - llDataLine_) * protocols::kLLDataBytes, &word, sizeof(word));
  }
  if (llDataLine_ == 1) {
    ll_.consume(protocols::llMessageLines(llInboxBytes_));
  } else {
    ll_.consume(protocols::llStampedMessageLines(llInboxBytes_));
    ++llStampsTaken_;
  }
  wakeSender();  // its LL room came back
  llLinesSeen_ = 0;
  llInboxRead_ = 0;
  return {llInbox_, llInboxBytes_};
}

std::span<const char> ShmRecvConnection::arrived(ShmRoute route) {
  // Not a byte of an operation before its stamp has been checked.
  if (stampDue() && !checkDueStamps(route)) return {};
  switch (route) {
    case ShmRoute::Simple: return simpleArrived();
    case ShmRoute::LL: return llArrived();
    case ShmRoute::Skip: break;
  }
  fail(ErrorKind::Internal, "reading padding from ", peer_);
}

void ShmRecvConnection::release(ShmRoute route, std::size_t bytes) {
  if (route == ShmRoute::LL) {
    llInboxRead_ += bytes;
    return;
  }
  slotRead_ += bytes;
  if (slotRead_ == slot_.bytes) {
    simple_.release();
    holdingSlot_ = false;
  }
}

void ShmRecvConnection::publishTaken() {
  HostOrdering::storeRelease(&header_->taken, queue_.completed());
  wakeSender();
}

bool ShmRecvConnection::progress() {
  const bool moved = queue_.drain([&](char* data, std::size_t bytes) -> std::size_t {
    const ShmRoute route = routes_.at(queue_.completed());
    if (route == ShmRoute::Skip) return bytes;
    const std::span<const char> there = arrived(route);
    const std::size_t n = std::min(bytes, there.size());
    if (n == 0) return 0;
    std::memcpy(data, there.data(), n);
    release(route, n);
    return n;
  });
  if (moved) publishTaken();
  // A stamp due before anything is posted here (a link the operation only
  // stamps, or one it receives on after it has waited for another peer) is
  // checked as soon as it comes, not only when the operation ends: a
  // mismatch it shows must not wait behind a wait elsewhere. It comes with
  // the operation's bytes, on its protocol's FIFO, or alone on Simple (what
  // checkDueStamp looks for on each route).
  if (queue_.empty() && stampDue()) {
    const std::size_t before = expected_.size();
    checkDueStamps(routes_.latest());
    return moved || expected_.size() != before;
  }
  return moved;
}

std::span<const char> ShmRecvConnection::readable() {
  if (!queue_.frontInPlace()) return {};  // earlier receives go first
  const std::span<const char> there = arrived(routes_.at(queue_.completed()));
  return there.first(std::min(there.size(), queue_.frontBytes()));
}

void ShmRecvConnection::consumeRead(std::size_t bytes) {
  HORA_ENFORCE(queue_.frontInPlace() && bytes <= queue_.frontBytes(),
               "consuming more than the in-place receive from ", peer_);
  if (bytes == 0) return;
  const ShmRoute route = routes_.at(queue_.completed());
  HORA_ENFORCE(bytes <= arrived(route).size(), "consuming more than has arrived from ", peer_);
  release(route, bytes);
  queue_.advance(bytes);
  publishTaken();
}

void ShmRecvConnection::alignStream(std::size_t alignment) {
  const std::size_t padding = paddingFor(postedBytes(), alignment);
  if (padding == 0) return;
  if (queue_.empty()) {
    queue_.countMoved(padding);
    publishTaken();
    return;
  }
  const ShmRoute route = routes_.latest();
  routes_.switchAt(queue_.posted(), ShmRoute::Skip);
  post(noBytesIn, padding);
  routes_.switchAt(queue_.posted(), route);
}

void ShmRecvConnection::beginMessage(protocols::Protocol protocol, const OpStamp* stamp) {
  const std::uint64_t at = queue_.posted();
  routes_.switchAt(at, routeFor(protocol));
  if (stamp == nullptr) return;
  expected_.push_back({*stamp, at});
  ++stampsOutstanding_;
}

void ShmRecvConnection::checkAlive() {
  // Bytes or stamps still in a FIFO are ours to read, whatever became of
  // the sender (whether they agree is for the reads to find).
  std::uint32_t header = 0;
  if (holdingSlot_ || llInboxRead_ < llInboxBytes_ || llLinesSeen_ != 0 || simple_.tryData(&slot_) ||
      ll_.tryLine(0, &header))
    return;
  checkLifeline(lifeline_, peer_);
}

}  // namespace hora::transport
