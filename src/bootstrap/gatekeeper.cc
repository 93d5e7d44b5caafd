#include "bootstrap/gatekeeper.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "base/log.h"

namespace hora::bootstrap {

Gatekeeper::Gatekeeper(Socket listener, Options options)
    : listener_(std::move(listener)), options_(std::move(options)) {
  // accept() must never block: the loop below accepts whatever is waiting
  // and goes back to reading the connections it already has.
  listener_.setNonBlocking(true);
}

Gatekeeper::~Gatekeeper() {
  for (auto& pending : pending_) drop(pending, "had not said who it is when the listener closed");
}

namespace {
// Errors accept(2) passes on from the connection it took (the listener is
// fine): Linux's list of those, which it says to treat like EAGAIN.
bool oneConnectionFailed(int error) {
  switch (error) {
    case ECONNABORTED: case EPROTO: case ENETDOWN: case ENOPROTOOPT: case EHOSTDOWN: case ENONET:
    case EHOSTUNREACH: case EOPNOTSUPP: case ENETUNREACH: case EPERM:
      return true;
    default:
      return false;
  }
}
}  // namespace

void Gatekeeper::acceptWaiting() {
  while (pending_.size() < kMaxPendingConnections) {
    Pending pending;
    pending.from.length = sizeof(pending.from.storage);
    int fd = ::accept4(listener_.fd(), reinterpret_cast<sockaddr*>(&pending.from.storage),
                       &pending.from.length, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR || oneConnectionFailed(errno)) {
        // That connection is gone from the backlog; take the next.
        if (errno != EINTR && errno != ECONNABORTED)
          HORA_LOG(Info, options_.name, ": accept failed for one connection: ", errnoText(errno));
        continue;
      }
      // Out of descriptors or memory, or the listener itself broken (shut
      // down by an abort: EINVAL): leave the rest in the backlog, rest the
      // listener for a moment and let the caller's deadline or abort
      // decide; the pending ones still progress. Said once, not at every try.
      if (!acceptFailing_)
        HORA_LOG(Warn, options_.name, ": accept failed: ", errnoText(errno), "; trying again every ",
                 kAcceptRetryPause.count(), " ms while connections wait in the backlog");
      acceptFailing_ = true;
      acceptResumes_ = Deadline::after(kAcceptRetryPause);
      return;
    }
    if (acceptFailing_) HORA_LOG(Warn, options_.name, ": accepting connections again");
    acceptFailing_ = false;
    pending.socket = Socket(fd);
    pending.patience = Deadline::after(kGreetingPatience);
    // Our size, not one the peer chose: nothing is allocated from its bytes.
    pending.bytes.resize(sizeof(Greeting) + options_.bodyBytes);
    pending_.push_back(std::move(pending));
  }
}

std::string Gatekeeper::checkGreeting(const Pending& pending) const {
  Greeting greeting;
  std::memcpy(&greeting, pending.bytes.data(), sizeof(greeting));
  if (!constantTimeEqual(&greeting.magic, &options_.magic, sizeof(greeting.magic)))
    return "wrong secret (not this communicator's unique id)";
  if (greeting.version != kWireVersion)
    return strCat("speaks hora wire version ", greeting.version, ", this rank speaks ",
                  kWireVersion, " (mixed hora versions?)");
  if (greeting.purpose != static_cast<std::uint16_t>(options_.purpose))
    return strCat("greeting is meant for another kind of listener (purpose ", greeting.purpose, ")");
  if (greeting.bodyBytes != options_.bodyBytes)
    return strCat("announced a ", greeting.bodyBytes, "-byte message, expected ",
                  options_.bodyBytes);
  return {};
}

bool Gatekeeper::readFrom(Pending& pending, std::string& reason) {
  const std::size_t greetingBytes = sizeof(Greeting);
  while (pending.received < pending.bytes.size()) {
    // Read the greeting alone first, so that it is judged before we take
    // in anything after it.
    std::size_t want = pending.received < greetingBytes ? greetingBytes - pending.received
                                                        : pending.bytes.size() - pending.received;
    ssize_t n = ::recv(pending.socket.fd(), pending.bytes.data() + pending.received, want, MSG_DONTWAIT);
    if (n == 0) {
      reason = pending.received == 0
                   ? "closed without a word"
                   : strCat("closed after ", pending.received, " of ", pending.bytes.size(), " bytes");
      return false;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;  // more later
      reason = strCat("connection failed: ", errnoText(errno));
      return false;
    }
    pending.received += static_cast<std::size_t>(n);
    if (pending.received == greetingBytes) {
      reason = checkGreeting(pending);
      if (!reason.empty()) {
        if (!options_.refusal.empty() && reason.rfind("wrong secret", 0) == 0) {
          Greeting greeting;
          std::memcpy(&greeting, pending.bytes.data(), sizeof(greeting));
          // Only a well-formed greeting for this listener earns an answer,
          // and only what fits the socket buffer now: never a wait.
          if (greeting.version == kWireVersion &&
              greeting.purpose == static_cast<std::uint16_t>(options_.purpose) &&
              greeting.bodyBytes == options_.bodyBytes)
            (void)::send(pending.socket.fd(), options_.refusal.data(), options_.refusal.size(),
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        return false;
      }
    }
  }
  return true;
}

void Gatekeeper::drop(Pending& pending, const std::string& reason) const {
  HORA_LOG(Info, options_.name, ": ignored a connection from ", pending.from.toString(), ": ",
           reason);
  pending.socket.close();
}

Gatekeeper::Guest Gatekeeper::admit(const Deadline& deadline, const std::atomic<bool>* abort,
                                    const std::string& waitingFor,
                                    const std::function<void()>& whileWaiting) {
  for (;;) {
    if (!admitted_.empty()) {
      Guest guest = std::move(admitted_.front());
      admitted_.pop_front();
      return guest;
    }
    if (abort != nullptr && abort->load(std::memory_order_relaxed))
      fail(ErrorKind::InvalidUsage, "communicator aborted while ", waitingFor);
    if (whileWaiting) whileWaiting();
    if (deadline.expired())
      fail(ErrorKind::Remote, "timed out ", waitingFor, " (HORA_TIMEOUT, or the timeout the program gave; the peer may be hung or dead)");
    serveOnce(deadline.pollTimeoutMs(Socket::kPollSliceMs), waitingFor);
  }
}

std::optional<Gatekeeper::Guest> Gatekeeper::tryAdmit() {
  // A guest that connected and sent everything needs two rounds: one to
  // accept it, one to read what it sent.
  for (int round = 0; round < 2 && admitted_.empty(); ++round) serveOnce(0, "looking for guests");
  if (admitted_.empty()) return std::nullopt;
  Guest guest = std::move(admitted_.front());
  admitted_.pop_front();
  return guest;
}

void Gatekeeper::serveOnce(int timeoutMs, const std::string& waitingFor) {
  // Poll the listener (while there is a free slot) and every pending
  // connection together; wake for the nearest stranger's patience too.
  std::vector<pollfd> entries;
  const bool listening = pending_.size() < kMaxPendingConnections && acceptResumes_.expired();
  if (listening) entries.push_back({listener_.fd(), POLLIN, 0});
  if (!acceptResumes_.expired()) timeoutMs = std::min(timeoutMs, acceptResumes_.pollTimeoutMs());
  for (const auto& pending : pending_) {
    entries.push_back({pending.socket.fd(), POLLIN, 0});
    timeoutMs = std::min(timeoutMs, pending.patience.pollTimeoutMs(Socket::kPollSliceMs));
  }
  int rc = ::poll(entries.data(), entries.size(), timeoutMs);
  if (rc < 0 && errno != EINTR)
    fail(ErrorKind::System, "poll failed while ", waitingFor, ": ", errnoText(errno));

  // Read first (the entries index pending_ as it is now), then accept.
  const std::size_t first = listening ? 1 : 0;
  std::vector<Pending> stillPending;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    Pending& pending = pending_[i];
    std::string reason;
    if (rc > 0 && entries[first + i].revents != 0 && readFrom(pending, reason)) {
      admitted_.push_back({std::move(pending.socket), pending.from,
                           std::vector<char>(pending.bytes.begin() + sizeof(Greeting), pending.bytes.end())});
      continue;
    }
    if (reason.empty() && pending.patience.expired())
      reason = pending.received == 0
                   ? strCat("sent nothing within ", kGreetingPatience.count(), " ms")
                   : strCat("sent only ", pending.received, " of ", pending.bytes.size(), " bytes within ",
                            kGreetingPatience.count(), " ms");
    if (!reason.empty()) {
      drop(pending, reason);
      continue;
    }
    stillPending.push_back(std::move(pending));
  }
  pending_ = std::move(stillPending);
  if (listening && rc > 0 && entries[0].revents != 0) acceptWaiting();
}

}  // namespace hora::bootstrap
