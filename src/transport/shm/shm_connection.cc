#include "transport/shm/shm_connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "base/error.h"

namespace hora::transport {

namespace {
struct SegmentOffer {
  std::int32_t pid;
  std::int32_t fd;
  std::uint64_t bytes;
};

void checkLifeline(Socket& lifeline, const std::string& peer) {
  char byte;
  ssize_t n = ::recv(lifeline.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
    fail(ErrorKind::Remote, "shared-memory peer ", peer,
         " closed its connection: the peer process exited or aborted");
}
}  // namespace

std::unique_ptr<ShmSendConnection> connectShmSender(Socket lifeline, std::string peerName,
                                                    std::size_t fifoBytes, const Deadline& deadline,
                                                    const std::atomic<bool>* abort) {
  const std::size_t bytes = kShmFifoDataOffset + fifoBytes;
  ShmSegment segment = ShmSegment::create(bytes);
  auto* header = new (segment.data()) ShmFifoHeader();
  header->magic = ShmFifoHeader::kMagic;
  header->capacity = fifoBytes;
  SegmentOffer offer{static_cast<std::int32_t>(getpid()), segment.fd(), bytes};
  lifeline.sendAll(&offer, sizeof(offer), deadline, abort, peerName);
  return std::make_unique<ShmSendConnection>(std::move(segment), std::move(lifeline),
                                             std::move(peerName));
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
  char ack = 1;
  lifeline.sendAll(&ack, 1, deadline, abort, peerName);
  return std::make_unique<ShmRecvConnection>(std::move(segment), std::move(lifeline),
                                             std::move(peerName));
}

ShmSendConnection::ShmSendConnection(ShmSegment segment, Socket lifeline, std::string peerName)
    : segment_(std::move(segment)),
      fifo_(segment_.data()),
      lifeline_(std::move(lifeline)),
      peer_(std::move(peerName)) {}

bool ShmSendConnection::progress() {
  if (awaitingAck_) collectAck();
  return queue_.drain([&](const char* data, std::size_t bytes) { return fifo_.push(data, bytes); });
}

void ShmSendConnection::collectAck() {
  char ack;
  if (lifeline_.tryRecv(&ack, 1, peer_) == 1) {
    segment_.closeDescriptor();
    awaitingAck_ = false;
  }
}

void ShmSendConnection::checkAlive() {
  if (awaitingAck_) collectAck();
  if (!awaitingAck_) checkLifeline(lifeline_, peer_);
}

ShmRecvConnection::ShmRecvConnection(ShmSegment segment, Socket lifeline, std::string peerName)
    : segment_(std::move(segment)),
      fifo_(segment_.data()),
      lifeline_(std::move(lifeline)),
      peer_(std::move(peerName)) {}

bool ShmRecvConnection::progress() {
  return queue_.drain([&](char* data, std::size_t bytes) { return fifo_.pop(data, bytes); });
}

void ShmRecvConnection::checkAlive() { checkLifeline(lifeline_, peer_); }

}  // namespace hora::transport
