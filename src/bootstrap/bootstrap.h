// Out-of-band communication among the ranks of one communicator during and
// after init: the table of all ranks (host, pid, addresses) and small
// collectives (all-gather, barrier) over a ring of TCP connections. The data
// transports exchange their connection details through it.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "bootstrap/control.h"
#include "bootstrap/gatekeeper.h"
#include "bootstrap/root_server.h"
#include "bootstrap/unique_id.h"

namespace hora::bootstrap {

// How often a rank waiting for a peer to connect looks whether it died.
inline constexpr std::chrono::milliseconds kLookForDeadPeers{200};

class Bootstrap {
 public:
  // Joins the rendezvous named by `id` as `rank` of `nranks`. If
  // hostRoot is true this rank first starts the root server at id.root.
  Bootstrap(const UniqueId& id, int rank, int nranks, bool hostRoot, const Deadline& deadline,
            const std::atomic<bool>* abort);
  // The deadline the rest of init runs under: the one given, or a later
  // one when the rendezvous root came up after this rank started (the
  // root's, which the other ranks' follow).
  const Deadline& joinDeadline() const { return joinDeadline_; }

  // Then, collective: connects the ring of all ranks (rank r to r + 1).
  // Kept apart so that a rank that fails here can tell the others why
  // (announce).
  void connectRing(const Deadline& deadline);

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

  // ---- The control plane (control.h, control.cc)
  // Tells every other rank, best effort and within about a second in all,
  // the error that makes this rank stop the communicator.
  void announce(const Error& error);
  // Passes a notice this rank was told on to its ring neighbours (not the
  // teller, not the rank blamed), best effort, before this rank closes.
  void passOn(const PeerNotice& notice);
  // A notice another rank announced, if one is here or comes within
  // `grace` (zero: only what has arrived already): the PeerNotice this rank
  // fails with.
  std::optional<PeerNotice> noticeWithin(std::chrono::milliseconds grace);
  // Whether `rank`'s process has gone: on this host, by its pid; on another,
  // by its listener refusing a probe. False when unsure.
  bool peerGone(int rank);
  // Whether `rank`'s process is on this host and stopped (it will not
  // move): the cause of a wait that timed out, rather than the neighbour
  // that waits on it too.
  bool peerStopped(int rank) const;
  // Whether `rank`'s process is on this host and still runs (neither gone
  // nor stopped): a peer that timed out then is late, blocked or in another
  // call, not dead.
  bool peerRunning(int rank) const;
  // Shrink: a member asks `leader` for the new communicator's id, or the
  // leader serves `members` - 1 such requests with `id` (each must give the
  // same `request`); both fail, naming the rank, if the ranks disagree.
  // `members` (sorted) are the ranks this rank's list keeps; the first leads.
  // `abort` (ncclCommAbort of the communicator being shrunk) ends the wait.
  UniqueId askShrinkLeader(const std::vector<int>& members, const ShrinkRequest& request, const Deadline& deadline,
                           const std::atomic<bool>* abort);
  void serveShrinkMembers(const std::vector<int>& members, const ShrinkRequest& request,
                          const UniqueId& id, const Deadline& deadline,
                          const std::atomic<bool>* abort);
  // After a shrink this rank led: tells each rank of `excluded` that the
  // others went on without it (best effort, bounded; a rank of this host
  // whose process is gone or stopped is not visited, ranks of other hosts
  // are visited at once).
  void tellLeftOut(const std::vector<int>& excluded);

 private:
  // The message a rank's text is told as to the rank who reads it.
  PeerNotice readNotice(Socket& socket, int from);
  // A notice's bytes: its header and `error`'s text; and one visit that
  // delivers them (bounded, failures logged).
  static std::vector<char> noticeMessage(const Error& error);
  void tell(int peer, const std::vector<char>& message);
  // The first of `held` (visits kept for later), else one that has arrived
  // on the control listener, if any; does not wait. The caller holds
  // controlMutex_.
  std::optional<Gatekeeper::Guest> heldOrArrived(std::deque<Gatekeeper::Guest>& held);
  // Answers the shrink requests waiting here (ones this rank does not
  // serve) with `why`; notices that arrive meanwhile are kept for
  // noticeWithin. The caller holds controlMutex_.
  // Throws InvalidUsage when among them is a ShrinkLeftOut visit from a rank
  // `awaited` says this rank still counts on.
  void refuseShrinkRequests(const std::function<std::string(int from)>& why,
                            const std::function<bool(int rank)>& awaited);
  // The InvalidUsage error of a rank that `leader` left out of its shrink.
  Error leftOutError(int leader) const;
  static bool isShrinkVisit(VisitKind kind) {
    return kind == VisitKind::ShrinkRequest || kind == VisitKind::ShrinkLeftOut;
  }
  void refuseShrinkRequest(Socket& socket, int from, const std::string& why);
  // Connects to `rank`'s listener and introduces this rank as `kind`.
  Socket visit(int rank, VisitKind kind, const Deadline& deadline);

  std::uint64_t magic_;
  std::mutex controlMutex_;  // control_ is used by one thread at a time
  Gatekeeper control_;       // the bootstrap listener, after the ring is made
  std::deque<Gatekeeper::Guest> shrinkRequests_;  // shrink visits, arrived before shrink()
  std::deque<Gatekeeper::Guest> heldNotices_;     // arrived during shrink()

  int rank_;
  int nranks_;
  const std::atomic<bool>* abort_;
  Deadline joinDeadline_ = Deadline::never();
  SocketAddress localAddress_;
  std::string interfaceName_;
  std::vector<PeerInfo> peers_;
  Socket next_;  // to rank+1
  Socket prev_;  // from rank-1
};

std::uint64_t localHostHash();

}  // namespace hora::bootstrap
