#include "transport/rdma/multi_rail.h"

#include <algorithm>

#include "base/error.h"

namespace hora::transport::rdma {

MultiRailDevice::MultiRailDevice(std::vector<std::shared_ptr<Device>> rails) : rails_(std::move(rails)) {
  HORA_CHECK_ARG(!rails_.empty(), "RDMA: a multi-rail device needs at least one rail");
  for (const auto& rail : rails_) HORA_CHECK_ARG(rail != nullptr, "RDMA: a multi-rail device's rail is null");
}

std::string MultiRailDevice::name() const {
  std::string names;
  for (const auto& rail : rails_) names += (names.empty() ? "" : " + ") + rail->name();
  return strCat(rails_.size(), " rails: ", names);
}

std::unique_ptr<QueuePair> MultiRailDevice::createQueuePairOn(std::size_t rail) {
  return rails_.at(rail)->createQueuePair();
}

std::size_t MultiRailDevice::queuePairsPerConnection() const {
  std::size_t most = rails_.size();
  for (const auto& rail : rails_) most = std::max(most, rail->queuePairsPerConnection());
  return most;
}

std::shared_ptr<Device> combineRails(std::vector<std::shared_ptr<Device>> devices) {
  if (devices.empty()) return nullptr;
  if (devices.size() == 1) return devices.front();
  return std::make_shared<MultiRailDevice>(std::move(devices));
}

}  // namespace hora::transport::rdma
