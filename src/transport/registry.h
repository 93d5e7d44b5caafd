// The transports hora can move bytes with, as a registry: one entry per kind
// of topology::TransportKind that this build implements, each able to set up
// both ends of a connection over the TCP socket the Connector opened (which
// stays the connection's lifeline). Topology chooses a kind per pair of
// ranks; the registry says which registered transport carries it, so a new
// transport (p2p over CUDA IPC, ib verbs) registers here without touching
// the core.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "base/deadline.h"
#include "base/socket.h"
#include "topology/topology.h"
#include "transport/connection.h"
#include "transport/shm/shm_connection.h"
#include "transport/user_registrations.h"

namespace hora::transport {

using topology::TransportKind;
using topology::transportName;

struct ConnectorOptions {
  std::chrono::milliseconds timeout;
  ShmOptions shm;
  // The communicator's registered buffers (ncclCommRegister), which RDMA
  // connections send from without a copy; null: none.
  std::shared_ptr<const UserRegistrations> userRegistrations;
};

// What both ends of a new connection are given.
struct ConnectionSetup {
  Socket lifeline;  // connected, introductions exchanged
  std::string peerName;
  const ConnectorOptions& options;
  const Deadline& deadline;
  const std::atomic<bool>* abort;
  // The connection will carry most of the traffic (the ring's, made at
  // init): set it up ready for that (shm: the FIFO's pages allocated now,
  // not on first use).
  bool busy = false;
};

struct TransportEntry {
  TransportKind kind;
  // The sending and receiving ends; each completes its half of the set-up
  // over the lifeline.
  std::unique_ptr<SendConnection> (*connectSender)(ConnectionSetup setup);
  std::unique_ptr<RecvConnection> (*connectReceiver)(ConnectionSetup setup);
  // Whether the receiver can read its buffer where the sender wrote it
  // (memory both processes map): then windows and ncclMemAlloc memory can be
  // shared between the two ranks as well.
  bool sharesHostMemory;
};

// The registered entry of `kind`, or null if this build has none.
const TransportEntry* findTransport(TransportKind kind);

// The kind that carries a pair topology chose `chosen` for: `chosen` itself
// when registered, otherwise the nearest registered kind that can connect
// the same pairs (p2p -> shm, ib -> tcp).
TransportKind carrierOf(TransportKind chosen);

}  // namespace hora::transport
