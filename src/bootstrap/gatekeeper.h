// Admits connections to one listener only once they have proved they
// belong to this communicator (see greeting.h); everyone else is a stranger
// that is dropped, logged at INFO, and never fails the job.
//
// Strangers cannot stall the rank either: the gatekeeper keeps accepting
// while earlier connections are still silent, reads all of them at once
// with poll(), and gives each at most kGreetingPatience to say who it is.
// A connection that closes, resets, sends junk, the wrong secret, or a
// length field other than the one expected is dropped at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/socket.h"
#include "bootstrap/greeting.h"

namespace hora::bootstrap {

// How long a new connection may take to send its greeting and message. A
// hora peer sends them right after connect() returns, so this only has to
// cover a loaded host scheduling it late; a stranger that stays silent
// holds a slot for this long but never holds up anybody else.
inline constexpr std::chrono::milliseconds kGreetingPatience{3000};

// Connections being read at once; more wait in the kernel's backlog until
// a slot frees (at the latest after kGreetingPatience).
inline constexpr std::size_t kMaxPendingConnections = 64;

// How long the listener rests after accept() failed for want of
// descriptors or memory, or on a listener an abort shut down. Connections
// stay in the kernel's backlog; polling the listener at once would find it
// readable again and spin.
inline constexpr std::chrono::milliseconds kAcceptRetryPause{100};

class Gatekeeper {
 public:
  struct Options {
    std::uint64_t magic = 0;    // the unique id's secret
    Purpose purpose{};          // what this listener is for
    std::size_t bodyBytes = 0;  // the exact message size that must follow
    std::string name;           // "bootstrap root", for log lines
    // Sent, best effort, to a connection whose greeting is well-formed for
    // this purpose but carries another secret: most likely a hora rank of
    // another job (a stale id) that deserves to know. Empty: send nothing.
    std::string refusal;
  };

  struct Guest {
    Socket socket;
    SocketAddress from;
    std::vector<char> body;  // Options::bodyBytes
  };

  Gatekeeper() = default;
  Gatekeeper(Socket listener, Options options);
  ~Gatekeeper();
  Gatekeeper(Gatekeeper&&) = default;
  Gatekeeper& operator=(Gatekeeper&&) = default;

  SocketAddress localAddress() const { return listener_.localAddress(); }

  // The next connection that presented the secret and a well-formed
  // greeting and message. Waits until `deadline` (a Remote error "timed out
  // <waitingFor>") or until *abort is set (InvalidUsage). Connections being
  // read when it returns stay pending for the next call. `whileWaiting`,
  // when given, runs at least every Socket::kPollSliceMs while nothing is
  // admitted; it may throw to end the wait (a peer known to be dead).
  Guest admit(const Deadline& deadline, const std::atomic<bool>* abort, const std::string& waitingFor,
              const std::function<void()>& whileWaiting = {});
  // A guest that has already connected and sent its greeting and message,
  // if there is one; does not wait.
  std::optional<Guest> tryAdmit();

 private:
  struct Pending {
    Socket socket;
    SocketAddress from;
    Deadline patience = Deadline::never();
    std::vector<char> bytes;  // sizeof(Greeting) + bodyBytes, sized by us
    std::size_t received = 0;
  };

  // One round: accepts what waits in the backlog and reads from pending
  // connections, for at most timeoutMs; admitted guests go to admitted_.
  void serveOnce(int timeoutMs, const std::string& waitingFor);
  void acceptWaiting();
  // Reads what `pending` has sent. Returns true when it is complete and
  // admitted; throws nothing: a stranger is dropped (`reason` set).
  bool readFrom(Pending& pending, std::string& reason);
  std::string checkGreeting(const Pending& pending) const;
  void drop(Pending& pending, const std::string& reason) const;

  Socket listener_;
  Options options_;
  // Set while accept() rests after it failed (kAcceptRetryPause).
  Deadline acceptResumes_ = Deadline::after(std::chrono::milliseconds(0));
  bool acceptFailing_ = false;  // out of descriptors or memory: said once
  std::vector<Pending> pending_;
  std::deque<Guest> admitted_;
};

}  // namespace hora::bootstrap
