// The RDMA device the `ib` transport uses in this process, and how its
// connections are made (registry.h). A backend that finds a usable device
// installs it (the verbs and libfabric backends are not built yet); a test
// may install a fake one. With none installed, `ib` is not available and
// TCP carries the pairs that would use it (transport/registry.h).
#pragma once

#include <memory>
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
  // Slots per connection and their size (credit_stream.h).
  virtual CreditGeometry geometry() const { return {}; }
};

// Installs `device` for connections made from now on (null: none).
void useDevice(std::shared_ptr<Device> device);
std::shared_ptr<Device> currentDevice();

// Both ends of an `ib` connection: the credit protocol over a queue pair of
// the current device, set up over the connection's lifeline.
std::unique_ptr<SendConnection> connectSender(ConnectionSetup setup);
std::unique_ptr<RecvConnection> connectReceiver(ConnectionSetup setup);

}  // namespace hora::transport::rdma
