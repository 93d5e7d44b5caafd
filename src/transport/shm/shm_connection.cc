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
  std::uint64_t probeAddress;  // where the sender mapped the segment: a pull test
};

// The receiver's answer.
constexpr char kAckPullAllowed = 1;
constexpr char kAckCopyOnly = 2;

struct RecordHeader {
  std::uint64_t length;
  std::uint64_t address;  // 0: the payload follows inline
};

// Inline records are cut to at most this much payload each, so a large
// message without pull still streams through a small FIFO.
constexpr std::size_t kMaxInlineRecord = 256 << 10;

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
  const std::size_t bytes = kShmFifoDataOffset + options.fifoBytes;
  ShmSegment segment = ShmSegment::create(bytes);
  auto* header = new (segment.data()) ShmFifoHeader();
  header->magic = ShmFifoHeader::kMagic;
  header->capacity = options.fifoBytes;
  SegmentOffer offer{static_cast<std::int32_t>(getpid()), segment.fd(), bytes,
                     reinterpret_cast<std::uint64_t>(segment.data())};
  lifeline.sendAll(&offer, sizeof(offer), deadline, abort, peerName);
  return std::make_unique<ShmSendConnection>(std::move(segment), std::move(lifeline),
                                             std::move(peerName), options);
}

std::unique_ptr<ShmRecvConnection> acceptShmReceiver(Socket lifeline, std::string peerName,
                                                     const Deadline& deadline,
                                                     const std::atomic<bool>* abort) {
  SegmentOffer offer{};
  lifeline.recvAll(&offer, sizeof(offer), deadline, abort, peerName);
  ShmSegment segment = ShmSegment::openPeer(offer.pid, offer.fd, offer.bytes);
  auto* header = static_cast<ShmFifoHeader*>(segment.data());
  if (header->magic != ShmFifoHeader::kMagic)
    fail(ErrorKind::Internal, "the shared-memory segment of ", peerName, " has no FIFO header");
  // May we read the sender's memory (same user, no ptrace restriction)?
  std::uint64_t magic = 0;
  bool pull = readRemote(offer.pid, &magic, offer.probeAddress, sizeof(magic)) &&
              magic == ShmFifoHeader::kMagic;
  char ack = pull ? kAckPullAllowed : kAckCopyOnly;
  lifeline.sendAll(&ack, 1, deadline, abort, peerName);
  return std::make_unique<ShmRecvConnection>(std::move(segment), std::move(lifeline),
                                             std::move(peerName), offer.pid);
}

// ------------------------------------------------------------------ sender

ShmSendConnection::ShmSendConnection(ShmSegment segment, Socket lifeline, std::string peerName,
                                     const ShmOptions& options)
    : segment_(std::move(segment)),
      fifo_(segment_.data()),
      lifeline_(std::move(lifeline)),
      peer_(std::move(peerName)),
      options_(options) {}

bool ShmSendConnection::progress() {
  if (awaitingAck_) collectAck();
  bool moved = false;
  for (;;) {
    if (inlineLeft_ > 0) {
      std::size_t n = fifo_.push(queue_.frontData(), std::min(inlineLeft_, queue_.frontBytes()));
      if (n == 0) break;
      queue_.advance(n);
      inlineLeft_ -= n;
      moved = true;
      continue;
    }
    if (queue_.empty() || fifo_.freeBytes() < sizeof(RecordHeader)) break;
    const std::size_t bytes = queue_.frontBytes();
    RecordHeader record{};
    if (pullAllowed_ && options_.pullMinBytes > 0 && bytes >= options_.pullMinBytes) {
      record = {bytes, reinterpret_cast<std::uint64_t>(queue_.frontData())};
      fifo_.push(reinterpret_cast<const char*>(&record), sizeof(record));
      queue_.advance(bytes);  // described; complete once consumed
    } else {
      record = {std::min(bytes, kMaxInlineRecord), 0};
      fifo_.push(reinterpret_cast<const char*>(&record), sizeof(record));
      inlineLeft_ = record.length;
    }
    moved = true;
  }
  return moved;
}

pollfd ShmSendConnection::pollEntry() const {
  bool pending = completedBytes() != postedBytes();
  return {pending ? lifeline_.fd() : -1, POLLIN, 0};
}

void ShmSendConnection::collectAck() {
  char ack;
  if (lifeline_.tryRecv(&ack, 1, peer_) == 1) {
    segment_.closeDescriptor();
    awaitingAck_ = false;
    pullAllowed_ = ack == kAckPullAllowed;
  }
}

void ShmSendConnection::checkAlive() {
  if (awaitingAck_) collectAck();
  if (!awaitingAck_) checkLifeline(lifeline_, peer_);
}

// ---------------------------------------------------------------- receiver

ShmRecvConnection::ShmRecvConnection(ShmSegment segment, Socket lifeline, std::string peerName,
                                     pid_t senderPid)
    : segment_(std::move(segment)),
      fifo_(segment_.data()),
      lifeline_(std::move(lifeline)),
      peer_(std::move(peerName)),
      senderPid_(senderPid),
      senderIsUs_(senderPid == getpid()) {}

void ShmRecvConnection::pull(char* dst, std::uint64_t address, std::size_t bytes) {
  if (senderIsUs_) {
    std::memcpy(dst, reinterpret_cast<const void*>(address), bytes);  // a rank of this process
    return;
  }
  if (!readRemote(senderPid_, dst, address, bytes))
    fail(ErrorKind::Remote, "reading ", bytes, " bytes from the memory of ", peer_,
         " failed: ", errnoText(errno), " (the peer process exited?)");
}

bool ShmRecvConnection::progress() {
  bool moved = false;
  auto& consumed = fifo_.header().consumed;
  while (!queue_.empty()) {
    if (recordLeft_ == 0) {
      if (fifo_.availableBytes() < sizeof(RecordHeader)) break;
      RecordHeader record;
      fifo_.pop(reinterpret_cast<char*>(&record), sizeof(record));
      recordLeft_ = record.length;
      recordAddress_ = record.address;
      continue;
    }
    std::size_t n = std::min<std::uint64_t>(queue_.frontBytes(), recordLeft_);
    if (recordAddress_ == 0) {
      n = fifo_.pop(queue_.frontData(), n);
      if (n == 0) break;
    } else {
      pull(queue_.frontData(), recordAddress_, n);
      recordAddress_ += n;
    }
    recordLeft_ -= n;
    queue_.advance(n);
    consumed.fetch_add(n, std::memory_order_release);
    moved = true;
  }
  return moved;
}

void ShmRecvConnection::checkAlive() {
  // Bytes still in the FIFO are ours to read, whatever became of the sender.
  if (fifo_.availableBytes() > 0) return;
  checkLifeline(lifeline_, peer_);
}

}  // namespace hora::transport
