// The RDMA devices the `ib` and `ofi` transports use in this process, and
// how their connections are made (registry.h). Both transports run the same
// credit protocol (credit_stream.h); they differ only in the device behind
// the queue pairs. A backend that finds a usable device installs it
// (network_devices.cc: verbs/ and ofi/); a test may install a fake one.
// With none installed for a kind, that kind is not available and the pairs
// that would use it take the next transport (of ib, ofi, tcp between
// hosts).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "transport/connection.h"
#include "transport/rdma/credit_stream.h"
#include "transport/rdma/queue_pair.h"
#include "transport/registry.h"

namespace hora::transport::rdma {

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual std::unique_ptr<QueuePair> createQueuePair() = 0;
  // Multi-rail: a device may stand for several NICs (rails, multi_rail.h).
  // A connection's queue pair q goes on rail q % rails() at both ends, so
  // that it pairs with its peer's on the same rail.
  virtual std::size_t rails() const { return 1; }
  virtual std::unique_ptr<QueuePair> createQueuePairOn(std::size_t /*rail*/) { return createQueuePair(); }
  // Slots per connection and their size (credit_stream.h).
  virtual CreditGeometry geometry() const { return {}; }
  // Queue pairs a connection's sender uses (the receiver makes as many).
  virtual std::size_t queuePairsPerConnection() const { return 1; }
  // The fabric the device's port is on (topology::RankPlacement): ranks
  // connect over it only with ranks on the same one. Unknown: any.
  virtual topology::RankPlacement::LinkLayer linkLayer() const { return topology::RankPlacement::LinkLayer::Unknown; }
  virtual std::uint64_t subnet() const { return 0; }
  // Whether the NIC's kernel driver registers dma-bufs, the way to
  // GPUDirect RDMA without a peer-memory module (gpu_direct.h), as a trial
  // registration found when the device opened; nullopt: not asked (a
  // device that is not a verbs port).
  virtual std::optional<bool> acceptsDmabuf() const { return std::nullopt; }
};

// Installs `device` as the one `kind` (Ib or Ofi) uses for connections
// made from now on (null: none).
void useDevice(TransportKind kind, std::shared_ptr<Device> device);
std::shared_ptr<Device> currentDevice(TransportKind kind);

// What turns `kind` (Ib or Ofi) off, for the log and hora-topo.
const char* disabledBy(TransportKind kind);

// Installs the device `open` returns (null, with `why` filled, when there
// is none) as `kind`'s, on the first call for that kind in the process;
// later calls, one installed already (a test's), or `disabled` do nothing.
// Says at INFO what was installed, or why nothing was.
void installOnce(TransportKind kind, bool disabled,
                 const std::function<std::shared_ptr<Device>(std::string& why)>& open);

// Both ends of an `ib` or `ofi` connection: the credit protocol over a
// queue pair of that kind's device, set up over the connection's lifeline.
template <TransportKind kind>
std::unique_ptr<SendConnection> connectSender(ConnectionSetup setup);
template <TransportKind kind>
std::unique_ptr<RecvConnection> connectReceiver(ConnectionSetup setup);

}  // namespace hora::transport::rdma
