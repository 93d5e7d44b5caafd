#include "transport/shm/shm_connection.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace hora::transport {

namespace {
struct SegmentOffer {
  std::int32_t pid;
  std::int32_t fd;
  std::uint64_t bytes;
  std::uint64_t ringOffset;
  std::uint64_t probeAddress;  // the segment in the sender: a readable word
  std::uint64_t device;        // the segment's memfd identity, which the
  std::uint64_t inode;         //   receiver checks (peer_file.h)
};

// The receiver's answer.
constexpr char kAckReadsSender = 1;
constexpr char kAckCopyOnly = 2;
constexpr char kZeros[kMaxStreamAlignment] = {};

// Bytes that bring `position` to a multiple of `alignment`.
std::size_t paddingFor(std::uint64_t position, std::size_t alignment) {
  HORA_ENFORCE(alignment > 0 && alignment <= kMaxStreamAlignment, "stream alignment ", alignment);
  return (alignment - position % alignment) % alignment;
}

void checkLifeline(Socket& lifeline, const std::string& peer) {
  char byte;
  ssize_t n = ::recv(lifeline.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
    fail(ErrorKind::Remote, "shared-memory peer ", peer,
         " closed its connection: the peer process exited or aborted");
}

bool readRemote(pid_t pid, void* dst, std::uint64_t address, std::size_t bytes) {
  iovec local{dst, bytes};
  iovec remote{reinterpret_cast<void*>(address), bytes};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(bytes);
}
}  // namespace

std::unique_ptr<ShmSendConnection> connectShmSender(Socket lifeline, std::string peerName,
                                                    const ShmOptions& options,
                                                    const Deadline& deadline,
                                                    const std::atomic<bool>* abort) {
  const std::size_t page = ShmSegment::pageBytes();
  static_assert(sizeof(ShmFifoHeader) <= 4096);
  const std::size_t capacity = (options.fifoBytes + page - 1) / page * page;
  const std::size_t ringOffset = page;
  ShmSegment segment = ShmSegment::create(ringOffset + capacity, ringOffset);
  auto* header = new (segment.data()) ShmFifoHeader();
  header->magic = ShmFifoHeader::kMagic;
  header->capacity = capacity;
  header->dataOffset = ringOffset;
  SegmentOffer offer{static_cast<std::int32_t>(getpid()),
                     segment.fd(),
                     segment.size(),
                     ringOffset,
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
  ShmSegment segment = ShmSegment::openPeer(offer.pid, offer.fd, {offer.device, offer.inode},
                                            offer.bytes, offer.ringOffset);
  auto* header = static_cast<ShmFifoHeader*>(segment.data());
  if (header->magic != ShmFifoHeader::kMagic || header->dataOffset != offer.ringOffset ||
      header->dataOffset + header->capacity != offer.bytes)
    fail(ErrorKind::Internal, "the shared-memory segment of ", peerName,
         " has no FIFO header of this version of hora");
  std::uint64_t magic = 0;
  const bool readsSender =
      offer.pid == getpid() || (readRemote(offer.pid, &magic, offer.probeAddress, sizeof(magic)) &&
                                magic == ShmFifoHeader::kMagic);
  const char ack = readsSender ? kAckReadsSender : kAckCopyOnly;
  lifeline.sendAll(&ack, 1, deadline, abort, peerName);
  return std::make_unique<ShmRecvConnection>(std::move(segment), std::move(lifeline),
                                             std::move(peerName), offer.pid, readsSender);
}

// ------------------------------------------------------------------ sender

ShmSendConnection::ShmSendConnection(ShmSegment segment, Socket lifeline, std::string peerName)
    : segment_(std::move(segment)),
      fifo_(segment_.data()),
      lifeline_(std::move(lifeline)),
      peer_(std::move(peerName)) {}

bool ShmSendConnection::progress() {
  if (awaitingAck_) collectAck();
  return queue_.drain([&](const char* data, std::size_t bytes) { return fifo_.push(data, bytes); });
}

std::span<char> ShmSendConnection::writable(std::size_t maxBytes) {
  if (!queue_.empty()) return {};  // posted bytes go first
  std::size_t room;
  char* region = fifo_.writeRegion(&room, maxBytes);
  wantsRoom_ = room < maxBytes;
  return {region, std::min(room, maxBytes)};
}

void ShmSendConnection::commitWritten(std::size_t bytes) {
  wantsRoom_ = false;
  fifo_.commitWrite(bytes);
  queue_.countMoved(bytes);
}

void ShmSendConnection::alignStream(std::size_t alignment) {
  post(kZeros, paddingFor(postedBytes(), alignment));
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
  if (acknowledgedBytes() >= postedBytes()) return;
  checkLifeline(lifeline_, peer_);
}

// ---------------------------------------------------------------- receiver

ShmRecvConnection::ShmRecvConnection(ShmSegment segment, Socket lifeline, std::string peerName,
                                     pid_t senderPid, bool readsSender)
    : segment_(std::move(segment)),
      fifo_(segment_.data()),
      lifeline_(std::move(lifeline)),
      peer_(std::move(peerName)),
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

bool ShmRecvConnection::progress() {
  return queue_.drain([&](char* data, std::size_t bytes) { return fifo_.pop(data, bytes); });
}

std::span<const char> ShmRecvConnection::readable() {
  if (!queue_.frontInPlace()) return {};  // earlier receives go first
  std::size_t ready;
  const char* region = fifo_.readRegion(&ready);
  return {region, std::min(ready, queue_.frontBytes())};
}

void ShmRecvConnection::consumeRead(std::size_t bytes) {
  HORA_ENFORCE(queue_.frontInPlace() && bytes <= queue_.frontBytes(),
               "consuming more than the in-place receive from ", peer_);
  fifo_.commitRead(bytes);
  queue_.advance(bytes);
}

void ShmRecvConnection::alignStream(std::size_t alignment) {
  post(padding_, paddingFor(postedBytes(), alignment));
}

void ShmRecvConnection::checkAlive() {
  // Bytes still in the FIFO are ours to read, whatever became of the sender.
  if (fifo_.availableBytes() > 0) return;
  checkLifeline(lifeline_, peer_);
}

}  // namespace hora::transport
