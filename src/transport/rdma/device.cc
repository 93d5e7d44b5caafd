#include "transport/rdma/device.h"

#include <algorithm>
#include <mutex>

#include "base/error.h"
#include "base/log.h"
#include "transport/stream_connection.h"

namespace hora::transport::rdma {

namespace {
std::mutex deviceMutex;
std::shared_ptr<Device>& installed(TransportKind kind) {
  HORA_CHECK_ARG(kind == TransportKind::Ib || kind == TransportKind::Ofi, "RDMA: ", transportName(kind),
                 " is not an RDMA transport");
  // Never destroyed: connections may still use them at exit.
  static auto* devices = new std::shared_ptr<Device>[2];
  return devices[kind == TransportKind::Ib ? 0 : 1];
}

std::shared_ptr<Device> requireDevice(TransportKind kind, const std::string& peer) {
  auto device = currentDevice(kind);
  if (!device)
    fail(ErrorKind::InvalidUsage, transportName(kind), " connection with ", peer, ": no ", transportName(kind),
         " device is in use");
  return device;
}
}  // namespace

void useDevice(TransportKind kind, std::shared_ptr<Device> device) {
  std::lock_guard<std::mutex> lock(deviceMutex);
  if (device) HORA_LOG(Info, "RDMA: using ", device->name(), " for the ", transportName(kind), " transport");
  installed(kind) = std::move(device);
}

std::shared_ptr<Device> currentDevice(TransportKind kind) {
  std::lock_guard<std::mutex> lock(deviceMutex);
  return installed(kind);
}

const char* disabledBy(TransportKind kind) {
  return kind == TransportKind::Ib ? "IB_DISABLE or NET" : "HORA_OFI_DISABLE or NET";
}

void installOnce(TransportKind kind, bool disabled,
                 const std::function<std::shared_ptr<Device>(std::string& why)>& open) {
  static std::mutex onceMutex;
  static bool tried[2] = {false, false};
  std::lock_guard<std::mutex> lock(onceMutex);
  bool& done = tried[kind == TransportKind::Ib ? 0 : 1];
  if (done || currentDevice(kind)) return;
  done = true;
  if (disabled) {
    HORA_LOG(Info, transportName(kind), ": disabled (", disabledBy(kind), ")");
    return;
  }
  std::string why;
  std::shared_ptr<Device> device = open(why);
  if (!device) {
    HORA_LOG(Info, transportName(kind), ": not available (", why,
             "); the pairs it would carry take the next transport (of ib, ofi, tcp between hosts)");
    return;
  }
  useDevice(kind, std::move(device));
}

template <TransportKind kind>
std::unique_ptr<SendConnection> connectSender(ConnectionSetup setup) {
  auto device = requireDevice(kind, setup.peerName);
  std::vector<std::unique_ptr<QueuePair>> queuePairs;
  const std::size_t count = std::max({std::size_t{1}, device->queuePairsPerConnection(), device->rails()});
  for (std::size_t q = 0; q < count; ++q) queuePairs.push_back(device->createQueuePairOn(q % device->rails()));
  auto stream = std::make_unique<CreditSendStream>(std::move(queuePairs), std::move(setup.lifeline), setup.peerName,
                                                   device->geometry(), setup.deadline,
                                                   setup.options.userRegistrations);
  return std::make_unique<StreamSendConnection>(std::move(stream), std::move(setup.peerName));
}

template <TransportKind kind>
std::unique_ptr<RecvConnection> connectReceiver(ConnectionSetup setup) {
  auto device = requireDevice(kind, setup.peerName);
  // As many queue pairs as the sender makes (credit_stream.h), each on the
  // rail of the sender's of the same number.
  std::size_t made = 1;
  auto stream = std::make_unique<CreditRecvStream>(device->createQueuePairOn(0),
                                                   [&] { return device->createQueuePairOn(made++ % device->rails()); },
                                                   std::move(setup.lifeline), setup.peerName, device->geometry(),
                                                   setup.deadline);
  return std::make_unique<StreamRecvConnection>(std::move(stream), std::move(setup.peerName));
}

template std::unique_ptr<SendConnection> connectSender<TransportKind::Ib>(ConnectionSetup);
template std::unique_ptr<SendConnection> connectSender<TransportKind::Ofi>(ConnectionSetup);
template std::unique_ptr<RecvConnection> connectReceiver<TransportKind::Ib>(ConnectionSetup);
template std::unique_ptr<RecvConnection> connectReceiver<TransportKind::Ofi>(ConnectionSetup);

}  // namespace hora::transport::rdma
