// The unique id that ranks share to find each other: NCCL's opaque 128 bytes,
// holding a signature, a random magic (tells this job from any other that
// might reach the same root) and the root's socket address.
#pragma once

#include <chrono>
#include <cstdint>

#include "base/socket.h"

namespace hora::bootstrap {

inline constexpr std::size_t kUniqueIdBytes = 128;

struct UniqueId {
  std::uint64_t magic = 0;
  SocketAddress root;
};

// Serialises into / parses from NCCL's 128 opaque bytes. A buffer that was
// not made by encode() (garbage, zeroes) is an InvalidArgument error.
void encode(const UniqueId& id, char (&bytes)[kUniqueIdBytes]);
UniqueId decode(const char (&bytes)[kUniqueIdBytes]);

// A fresh id for a new communicator (ncclGetUniqueId). With NCCL_COMM_ID
// (or HORA_COMM_ID) = "host:port" the id names that address and a magic
// derived from it, so every process can make the same id on its own; rank 0
// then hosts the root there during init. Otherwise a root server starts now,
// in this process, on the chosen interface.
UniqueId createUniqueId();

// A fresh id whose root listens on loopback: for communicators whose ranks
// are all threads of this process (ncclCommInitAll).
UniqueId createLocalUniqueId();

// A fresh id whose root starts now in this process, listening on `address`'s
// host (any port), whatever NCCL_COMM_ID says: for a communicator made from
// another one (ncclCommSplit), whose ranks reach this host already.
UniqueId createUniqueIdAt(const SocketAddress& address);

// A fresh id whose root starts now in this process on the chosen interface,
// waiting `rootTimeout` for the ranks, whatever NCCL_COMM_ID says: for a
// rendezvous that publishes the root's address itself (file://).
UniqueId createUniqueIdHere(std::chrono::milliseconds rootTimeout);

// The id every rank derives from a fixed root address (env:// and tcp://
// init methods, NCCL_COMM_ID): magic = a hash of the address text.
UniqueId uniqueIdForAddress(const SocketAddress& root);

// True when NCCL_COMM_ID/HORA_COMM_ID is set: rank 0 must host the root.
bool rootHostedByRankZero();

// Refuses (InvalidArgument) a NCCL_COMM_ID/HORA_COMM_ID that is set but
// names no address, as createUniqueId does: for ncclCommInitAll, which
// does not use it (its ranks meet on loopback) but, as NCCL's, must not
// accept what ncclGetUniqueId refuses.
void checkCommIdVariable();

}  // namespace hora::bootstrap
