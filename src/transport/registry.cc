#include "transport/registry.h"

#include "base/error.h"
#include "transport/rdma/device.h"
#include "transport/stream_connection.h"

namespace hora::transport {
namespace {

std::unique_ptr<SendConnection> tcpSender(ConnectionSetup setup) {
  return std::make_unique<StreamSendConnection>(
      std::make_unique<SocketStream>(std::move(setup.lifeline), setup.peerName), std::move(setup.peerName));
}
std::unique_ptr<RecvConnection> tcpReceiver(ConnectionSetup setup) {
  return std::make_unique<StreamRecvConnection>(
      std::make_unique<SocketStream>(std::move(setup.lifeline), setup.peerName), std::move(setup.peerName));
}
std::unique_ptr<SendConnection> shmSender(ConnectionSetup setup) {
  return connectShmSender(std::move(setup.lifeline), std::move(setup.peerName), setup.options.shm,
                          setup.deadline, setup.abort, setup.busy);
}
std::unique_ptr<RecvConnection> shmReceiver(ConnectionSetup setup) {
  return acceptShmReceiver(std::move(setup.lifeline), std::move(setup.peerName), setup.deadline,
                           setup.abort);
}

constexpr TransportEntry kRegistry[] = {
    {TransportKind::Tcp, tcpSender, tcpReceiver, false},
    {TransportKind::Shm, shmSender, shmReceiver, true},
};

// Available only while an RDMA device of their kind is in use (rdma/device.h).
constexpr TransportEntry kIb{TransportKind::Ib, rdma::connectSender<TransportKind::Ib>,
                             rdma::connectReceiver<TransportKind::Ib>, false};
constexpr TransportEntry kOfi{TransportKind::Ofi, rdma::connectSender<TransportKind::Ofi>,
                              rdma::connectReceiver<TransportKind::Ofi>, false};

}  // namespace

const TransportEntry* findTransport(TransportKind kind) {
  if (kind == TransportKind::Ib) return rdma::currentDevice(kind) ? &kIb : nullptr;
  if (kind == TransportKind::Ofi) return rdma::currentDevice(kind) ? &kOfi : nullptr;
  for (const TransportEntry& entry : kRegistry)
    if (entry.kind == kind) return &entry;
  return nullptr;
}

TransportKind carrierOf(TransportKind chosen) {
  if (findTransport(chosen) != nullptr) return chosen;
  // Ranks that could use p2p share a host, so shm connects them; ranks that
  // could use ib or ofi reach each other over IP.
  const TransportKind nearest = chosen == TransportKind::P2p ? TransportKind::Shm : TransportKind::Tcp;
  HORA_ENFORCE(findTransport(nearest) != nullptr, "no transport registered for ",
               transportName(nearest));
  return nearest;
}

}  // namespace hora::transport
