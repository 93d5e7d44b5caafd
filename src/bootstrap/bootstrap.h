// Out-of-band communication among the ranks of one communicator during and
// after init: the table of all ranks (host, pid, addresses) and small
// collectives (all-gather, barrier) over a ring of TCP connections. The data
// transports exchange their connection details through it.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "bootstrap/root_server.h"
#include "bootstrap/unique_id.h"

namespace hora::bootstrap {

class Bootstrap {
 public:
  // Joins the rendezvous named by `id` as `rank` of `nranks`. If
  // hostRoot is true this rank first starts the root server at id.root.
  Bootstrap(const UniqueId& id, int rank, int nranks, bool hostRoot, const Deadline& deadline,
            const std::atomic<bool>* abort);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const std::vector<PeerInfo>& peers() const { return peers_; }
  // "rank 3 (host vm, pid 1234)": how errors name a peer.
  std::string describe(int rank) const;
  // The address other ranks should use to reach this host (the interface
  // chosen for the bootstrap listener).
  const SocketAddress& localAddress() const { return localAddress_; }
  // That interface's name ("eth0", "ib0").
  const std::string& interfaceName() const { return interfaceName_; }

  // In place: rank r's `bytesPerRank` bytes at data + r * bytesPerRank.
  void allGather(void* data, std::size_t bytesPerRank, const Deadline& deadline);
  void barrier(const Deadline& deadline);

  // Closes the connections so peers blocked on this rank see EOF.
  void shutdown();

 private:
  int rank_;
  int nranks_;
  const std::atomic<bool>* abort_;
  SocketAddress localAddress_;
  std::string interfaceName_;
  std::vector<PeerInfo> peers_;
  Socket next_;  // to rank+1
  Socket prev_;  // from rank-1
};

std::uint64_t localHostHash();

}  // namespace hora::bootstrap
