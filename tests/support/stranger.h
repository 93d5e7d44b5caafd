// A stranger on one of hora's listening ports: a process that connects but
// is not a rank of the communicator (a port scanner, a health check, a job
// that reused the port, an attacker who knows only the address).
#pragma once

#include <cstdint>
#include <string>

namespace hora::test_support {

enum class StrangerKind {
  ConnectAndClose,  // connects, closes at once
  RandomBytes,      // sends 64 random bytes, then stays connected
  Silent,           // connects and never sends (a half-open peer)
  HugeLength,       // the right secret, then a length field of 4 GiB - 1
  WrongMagic,       // a well-formed greeting with another job's secret
  Reset,            // connects, then aborts with a reset (SO_LINGER 0)
};

std::string kindName(StrangerKind kind);

// The greeting's purpose code of the listener a stranger reaches (the
// wire layout of src/bootstrap/greeting.h, copied here on purpose: a
// change to the wire format should be a deliberate change to this test).
enum class Listener : std::uint16_t { Root = 1, Ring = 2, Transport = 3 };

std::string listenerName(Listener listener);

// Connects to 127.0.0.1:port and misbehaves as `kind` says. `magic` is the
// communicator's secret (which a stranger knows only when the id is
// derived from NCCL_COMM_ID). Owns the connection it keeps open; closes it
// when destroyed.
class Stranger {
 public:
  Stranger(StrangerKind kind, int port, Listener listener, std::uint64_t magic);
  ~Stranger();
  Stranger(Stranger&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Stranger(const Stranger&) = delete;
  Stranger& operator=(const Stranger&) = delete;
  Stranger& operator=(Stranger&&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace hora::test_support
