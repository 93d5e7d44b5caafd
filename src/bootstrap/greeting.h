// The first bytes on every connection to a hora listener (the rendezvous
// root, a rank's bootstrap ring listener, a rank's transport listener).
//
// A listener treats whoever connects as a stranger until the greeting
// proves otherwise: it must carry the unique id's magic (the shared secret
// of one communicator), this hora's wire version, the purpose of the
// listener it reached, and the exact size of the message that follows.
// Anything else (port scanners, health checks, a job that reused the port,
// junk) is dropped by the Gatekeeper (gatekeeper.h) without failing init.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/deadline.h"
#include "base/socket.h"

namespace hora::bootstrap {

// Which listener a connection is meant for: a greeting for one is refused
// by the others, so a confused peer cannot be mistaken for another kind.
enum class Purpose : std::uint16_t {
  RootHello = 1,   // a rank joining at the rendezvous root
  RingHello = 2,   // a rank's ring neighbour (bootstrap all-gather/barrier)
  Connection = 3,  // a data connection (transport/connector.h)
};

// Bumped whenever a greeting or a message after it changes layout.
inline constexpr std::uint16_t kWireVersion = 5;

// On the wire in host byte order (every rank of a job runs the same build
// on the same architecture; the version catches most mismatches).
struct Greeting {
  std::uint64_t magic = 0;
  std::uint16_t version = kWireVersion;
  std::uint16_t purpose = 0;
  std::uint32_t bodyBytes = 0;  // the message after the greeting
};
static_assert(sizeof(Greeting) == 16, "the greeting is 16 bytes on the wire");

// True if the `bytes` at a and b are equal. Takes the same time wherever
// they differ, so that timing a listener's answers does not reveal how many
// leading bytes of a guessed secret were right.
bool constantTimeEqual(const void* a, const void* b, std::size_t bytes);

// Sends the greeting and then `body` (bodyBytes of it) in one write.
void sendGreeting(Socket& socket, std::uint64_t magic, Purpose purpose, const void* body,
                  std::size_t bodyBytes, const Deadline& deadline, const std::atomic<bool>* abort,
                  const std::string& peer);

}  // namespace hora::bootstrap
