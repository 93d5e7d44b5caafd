// A shared-memory sender and receiver connected in one process, over a TCP
// lifeline on loopback: the same handshake and the same memory as between
// two ranks, with both ends driven from the test's thread.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "base/deadline.h"
#include "base/socket.h"
#include "transport/shm/shm_connection.h"

namespace hora::transport::testing {

inline constexpr std::size_t kFifoBytes = 64 << 10;  // whole pages on every Linux page size up to 64 KiB
inline constexpr std::chrono::seconds kTimeout{10};
inline const std::string kSenderName = "test sender";
inline const std::string kReceiverName = "test receiver";

inline bool isAligned(const void* pointer, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(pointer) % alignment == 0;
}

class ShmConnectionTest : public ::testing::Test {
 protected:
  // A connected pair of loopback TCP sockets: one end for each side.
  void SetUp() override {
    const Deadline deadline = Deadline::after(kTimeout);
    Socket listener = Socket::listen(SocketAddress::parse("127.0.0.1:0"));
    senderLifeline_ =
        Socket::connect(listener.localAddress(), deadline, nullptr, "the test listener");
    receiverLifeline_ = listener.accept(deadline, nullptr, "for the test's lifeline");
  }

  // busy: the FIFO's pages allocated at set-up (the ring's connections);
  // otherwise on first use.
  void connectSender(bool busy = false) {
    ShmOptions options;
    options.fifoBytes = kFifoBytes;
    sender = connectShmSender(std::move(senderLifeline_), kReceiverName, options,
                              Deadline::after(kTimeout), nullptr, busy);
  }
  void acceptReceiver() {
    receiver = acceptShmReceiver(std::move(receiverLifeline_), kSenderName,
                                 Deadline::after(kTimeout), nullptr);
  }
  // Both ends, with one byte sent through so that the sender has seen the
  // receiver's answer: its completedBytes() and idle() then mean "in the FIFO".
  void connectAndSettle() {
    connectSender();
    acceptReceiver();
    const char out = 'h';
    char in = 0;
    sender->post(&out, 1);
    receiver->post(&in, 1);
    ASSERT_TRUE(pumpUntil(
        [&] { return sender->completedBytes() == 1 && receiver->completedBytes() == 1; }));
    ASSERT_EQ(in, 'h');
  }

  // Progresses both ends until `done` or the deadline.
  ::testing::AssertionResult pumpUntil(const std::function<bool()>& done) {
    const Deadline deadline = Deadline::after(kTimeout);
    while (!done()) {
      if (deadline.expired())
        return ::testing::AssertionFailure() << "no progress within " << kTimeout.count() << " s";
      if (sender) sender->progress();
      if (receiver) receiver->progress();
      std::this_thread::yield();
    }
    return ::testing::AssertionSuccess();
  }

  std::unique_ptr<ShmSendConnection> sender;
  std::unique_ptr<ShmRecvConnection> receiver;

 private:
  Socket senderLifeline_;
  Socket receiverLifeline_;
};

// Calls `check` until it throws (the peer's exit may take a moment to show
// on the socket) and returns what it threw.
inline Error errorSoon(const std::function<void()>& check) {
  const Deadline deadline = Deadline::after(kTimeout);
  for (;;) {
    try {
      check();
    } catch (const Error& error) {
      return error;
    }
    if (deadline.expired()) return Error(ErrorKind::Internal, "no error within the timeout");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Messages of at most kShmLLMaxBytes take LL (as HORA_LL_MAX_BYTES=512
// would have the planner choose), larger ones Simple.
inline protocols::Protocol protocolFor(std::size_t bytes) {
  return bytes <= kShmLLMaxBytes ? protocols::Protocol::LL : protocols::Protocol::Simple;
}

}  // namespace hora::transport::testing
