// The ib transport's device on libibverbs: the port this process's ib
// connections use, and a reliable-connected queue pair on it for each
// (verbs_queue_pair.h).
//
// Which port: of the ports of every device libibverbs lists that
// NCCL_IB_HCA allows (hca_filter.h) and that are ACTIVE, the first on the
// NIC nearest the rank (topology::rdmaNicsNearest), else in the library's
// order. Ports of other NICs as near as that one, on the same fabric, open
// as further rails (furtherRails, multi_rail.h): each connection's
// NCCL_IB_QPS_PER_CONNECTION queue pairs then take turns over the rails.
// No library, no device, no allowed active port: not available, said with
// the reason, never an error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/rdma/device.h"
#include "transport/rdma/verbs/hca_filter.h"
#include "transport/rdma/verbs/verbs_api.h"
#include "transport/rdma/verbs/verbs_port.h"

namespace hora::transport::rdma::verbs {

// A port as listed, before it is opened.
struct PortListing {
  std::string device;  // "mlx5_0"
  int port = 1;
  bool active = false;
  std::string linkLayer;  // "InfiniBand", "Ethernet"
  ibv_device* handle = nullptr;  // in the list it came from, to open it by
};

// The listed ports this process may use, those of the devices named in
// `preferred` first in its order, then the rest in the listed order; `why`
// says what was left out and why when none is.
std::vector<PortListing> usablePorts(const std::vector<PortListing>& listed, const HcaFilter& filter,
                                     const std::vector<std::string>& preferred, std::string& why);

// Of `usable` (usablePorts' order), the ports to open as further rails
// beside usable[opened] (multi_rail.h): those after it on devices named in
// `rails` (topology::rdmaRailsNearest), on the same link layer, one per
// device and port.
std::vector<PortListing> furtherRails(const std::vector<PortListing>& usable, std::size_t opened,
                                      const std::vector<std::string>& rails);

// Every port of `devices` (ibv_get_device_list's, which must outlive the
// listing), queried, not opened for use.
std::vector<PortListing> listPorts(const VerbsApi& api, ibv_device** devices, int count);

// Whether the kernel driver behind `pd` registers dma-bufs: a trial
// registration of no memory with an invalid descriptor, as NCCL makes. A
// driver without dma-buf support refuses it for that (EOPNOTSUPP,
// EPROTONOSUPPORT); one with it gets as far as the descriptor (EBADF).
// False where libibverbs has no ibv_reg_dmabuf_mr.
bool driverRegistersDmabuf(const VerbsApi& api, ibv_pd* pd);

class VerbsDevice final : public Device {
 public:
  explicit VerbsDevice(std::shared_ptr<VerbsPort> port)
      : port_(std::move(port)), acceptsDmabuf_(driverRegistersDmabuf(*port_->api, port_->pd)) {}
  std::string name() const override;
  std::unique_ptr<QueuePair> createQueuePair() override;
  topology::RankPlacement::LinkLayer linkLayer() const override;
  // InfiniBand: the subnet prefix, GID 0's first 8 bytes (the GID in use).
  std::uint64_t subnet() const override;
  // NCCL_IB_QPS_PER_CONNECTION.
  std::size_t queuePairsPerConnection() const override;
  std::optional<bool> acceptsDmabuf() const override { return acceptsDmabuf_; }

 private:
  std::shared_ptr<VerbsPort> port_;
  bool acceptsDmabuf_;
};

struct VerbsOpening {
  std::shared_ptr<VerbsDevice> device;  // null: none usable
  std::vector<std::shared_ptr<VerbsDevice>> moreRails;
  std::string why;
};

// Lists, filters (NCCL_IB_HCA from the environment) and opens the first
// usable port, with NCCL_IB_* settings from the environment. A port that
// fails to open is skipped for the next, its error kept in `why`. Then the
// further rails (furtherRails) that open and share the first's fabric,
// in `moreRails`.
VerbsOpening openVerbsDevice(const VerbsApi& api, const std::vector<std::string>& preferred,
                             const std::vector<std::string>& rails = {});

// Installs the ib device for this process (rdma::useDevice) unless one is
// installed already or ib is disabled, said once at INFO; acts on the
// first call (device.h's installOnce). `preferred`: NIC names, nearest the
// rank first; `rails`: those as near as the first, which carry a share of
// every connection when more than one of them opens (multi_rail.h).
void prepareVerbs(bool disabled, const std::vector<std::string>& preferred,
                  const std::vector<std::string>& rails = {});

}  // namespace hora::transport::rdma::verbs
