#include "transport/rdma/device.h"

#include <mutex>

#include "base/error.h"
#include "base/log.h"
#include "transport/stream_connection.h"

namespace hora::transport::rdma {

namespace {
std::mutex deviceMutex;
std::shared_ptr<Device>& installed() {
  static auto* device = new std::shared_ptr<Device>();  // never destroyed: used at exit
  return *device;
}

std::shared_ptr<Device> requireDevice(const std::string& peer) {
  auto device = currentDevice();
  if (!device) fail(ErrorKind::InvalidUsage, "RDMA connection with ", peer, ": no RDMA device is in use");
  return device;
}
}  // namespace

void useDevice(std::shared_ptr<Device> device) {
  std::lock_guard<std::mutex> lock(deviceMutex);
  if (device) HORA_LOG(Info, "RDMA: using device ", device->name(), " for the ib transport");
  installed() = std::move(device);
}

std::shared_ptr<Device> currentDevice() {
  std::lock_guard<std::mutex> lock(deviceMutex);
  return installed();
}

std::unique_ptr<SendConnection> connectSender(ConnectionSetup setup) {
  auto device = requireDevice(setup.peerName);
  auto stream = std::make_unique<CreditSendStream>(device->createQueuePair(), std::move(setup.lifeline),
                                                   setup.peerName, device->geometry(), setup.deadline);
  return std::make_unique<StreamSendConnection>(std::move(stream), std::move(setup.peerName));
}

std::unique_ptr<RecvConnection> connectReceiver(ConnectionSetup setup) {
  auto device = requireDevice(setup.peerName);
  auto stream = std::make_unique<CreditRecvStream>(device->createQueuePair(), std::move(setup.lifeline),
                                                   setup.peerName, device->geometry(), setup.deadline);
  return std::make_unique<StreamRecvConnection>(std::move(stream), std::move(setup.peerName));
}

}  // namespace hora::transport::rdma
