// A reliable, ordered byte stream driven without blocking: what the
// stream connections (stream_connection.h) move an executor's bytes and
// stamp frames over. A TCP socket is one (SocketStream); the RDMA credit
// protocol is another (rdma/credit_stream.h).
#pragma once

#include <poll.h>

#include <cstddef>
#include <string>

#include "base/socket.h"

namespace hora::transport {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Moves what fits now, from `first` then `second` (either may be empty),
  // and returns how many bytes left; 0 when nothing can move yet. Throws a
  // Remote error naming the peer when it is gone.
  virtual std::size_t trySendTwo(const void* first, std::size_t firstBytes, const void* second,
                                 std::size_t secondBytes) = 0;
  // Reads what has come, into `first` then `second`; 0 when nothing has.
  virtual std::size_t tryRecvTwo(void* first, std::size_t firstBytes, void* second, std::size_t secondBytes) = 0;
  std::size_t trySend(const void* data, std::size_t bytes) { return trySendTwo(data, bytes, nullptr, 0); }
  std::size_t tryRecv(void* data, std::size_t bytes) { return tryRecvTwo(data, bytes, nullptr, 0); }
  // What to poll() on while waiting to send (or to receive); fd -1: spin.
  virtual pollfd pollEntry(bool sending) const = 0;
  // Throws a Remote error if the peer is known to be gone.
  virtual void checkAlive() {}
  // Whether the stream may send from the caller's memory without a copy,
  // fixed for its life: if not, heldBytes() is always 0.
  virtual bool mayHold() const { return false; }
  // How many of the bytes taken last the stream still reads from the
  // caller's memory (sent without a copy, not yet complete): the caller
  // may not reuse them yet. A trySendTwo of no bytes moves this on.
  virtual std::size_t heldBytes() const { return 0; }
  // The program deregistered buffers (UserRegistrations): a stream that
  // registered them with a device releases those registrations now, so
  // their pages are not pinned until it next sends. Called only while no
  // operation uses the stream.
  virtual void releaseDeregistered() {}
};

// A connected TCP socket as a ByteStream.
class SocketStream final : public ByteStream {
 public:
  SocketStream(Socket socket, std::string peerName) : socket_(std::move(socket)), peer_(std::move(peerName)) {
    socket_.setNoDelay();
  }
  std::size_t trySendTwo(const void* first, std::size_t firstBytes, const void* second,
                         std::size_t secondBytes) override {
    return socket_.trySendTwo(first, firstBytes, second, secondBytes, peer_);
  }
  std::size_t tryRecvTwo(void* first, std::size_t firstBytes, void* second, std::size_t secondBytes) override {
    return socket_.tryRecvTwo(first, firstBytes, second, secondBytes, peer_);
  }
  pollfd pollEntry(bool sending) const override {
    return {socket_.fd(), static_cast<short>(sending ? POLLOUT : POLLIN), 0};
  }

 private:
  Socket socket_;
  std::string peer_;
};

}  // namespace hora::transport
