// Multi-rail: one rank's RDMA traffic spread over several NICs (rails)
// that are equally near its data. The credit protocol already lets one
// connection's slots take turns over several queue pairs (credit_stream.h);
// here those queue pairs live on different NICs, queue pair q on rail
// q % rails at both ends (device.h), so each NIC carries its share of every
// connection's slots and the peer's NIC of the same number receives it.
//
// Rails are expected to be one fabric, or parallel fabrics whose rail i
// reaches the peer's rail i (a rail-optimised cluster), with as many rails
// on every rank; a rank with fewer rails puts the extra queue pairs on the
// rails it has, which then must reach the peer's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/rdma/device.h"

namespace hora::transport::rdma {

class MultiRailDevice final : public Device {
 public:
  // `rails` (at least one): the first decides the slots' geometry and
  // the fabric the connection is on.
  explicit MultiRailDevice(std::vector<std::shared_ptr<Device>> rails);

  std::string name() const override;
  std::unique_ptr<QueuePair> createQueuePair() override { return createQueuePairOn(0); }
  std::size_t rails() const override { return rails_.size(); }
  std::unique_ptr<QueuePair> createQueuePairOn(std::size_t rail) override;
  CreditGeometry geometry() const override { return rails_.front()->geometry(); }
  // At least one queue pair per rail, more if a rail asks for more.
  std::size_t queuePairsPerConnection() const override;
  topology::RankPlacement::LinkLayer linkLayer() const override { return rails_.front()->linkLayer(); }
  std::uint64_t subnet() const override { return rails_.front()->subnet(); }
  std::optional<bool> acceptsDmabuf() const override { return rails_.front()->acceptsDmabuf(); }

 private:
  std::vector<std::shared_ptr<Device>> rails_;
};

// `devices` as one device: the device itself when there is one, a
// MultiRailDevice over them when there are several; null for none.
std::shared_ptr<Device> combineRails(std::vector<std::shared_ptr<Device>> devices);

// A backend's opening (its first device and further rails) as one device.
template <typename Rail>
std::shared_ptr<Device> combineRails(std::shared_ptr<Device> first, const std::vector<std::shared_ptr<Rail>>& more) {
  if (!first) return nullptr;
  std::vector<std::shared_ptr<Device>> all{std::move(first)};
  all.insert(all.end(), more.begin(), more.end());
  return combineRails(std::move(all));
}

}  // namespace hora::transport::rdma
