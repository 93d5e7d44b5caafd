#include "bootstrap/bootstrap.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>

#include "base/env.h"
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/gatekeeper.h"
#include "bootstrap/greeting.h"

namespace hora::bootstrap {

std::uint64_t localHostHash() {
  // NCCL_HOSTID names the host instead of its name and boot id, as NCCL
  // reads it: processes of one machine given different ids are different
  // hosts (their ranks talk over the network transports, device buffers
  // through the network proxy), which is how a multi-host job is tried on
  // one machine.
  const std::optional<std::string> id = env::get({"HORA_HOSTID", "NCCL_HOSTID"});
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  // Ranks in different network or pid namespaces of one machine are
  // different hosts to us: they cannot share memory through /proc/<pid>.
  std::string key = id ? "id:" + *id : std::string(name);
  for (const char* ns : {"/proc/self/ns/net", "/proc/self/ns/pid"}) {
    char target[256] = {0};
    ssize_t n = readlink(ns, target, sizeof(target) - 1);
    key += '|';
    if (n > 0) key.append(target, static_cast<std::size_t>(n));
  }
  // The initial namespaces have the same numbers on every machine, so two
  // machines with one hostname (cloned VMs, containers given a --hostname)
  // would hash alike; the kernel's boot id tells them apart, and is the
  // same in every container of one machine.
  if (!id) {
    std::ifstream bootId("/proc/sys/kernel/random/boot_id");
    std::string boot;
    std::getline(bootId, boot);
    key += '|';
    key += boot;
  }
  return std::hash<std::string>{}(key);
}

namespace {
// The root's table, checked before anything in it is used: something else
// than hora's root may answer at a reused address.
void checkPeerTable(std::vector<PeerInfo>& peers, const std::string& rootName) {
  for (std::size_t r = 0; r < peers.size(); ++r) {
    PeerInfo& peer = peers[r];
    peer.host[sizeof(peer.host) - 1] = '\0';
    if (peer.rank != static_cast<std::int32_t>(r) || peer.listenLength == 0 ||
        peer.listenLength > sizeof(peer.listen) ||
        (peer.listen.ss_family != AF_INET && peer.listen.ss_family != AF_INET6))
      fail(ErrorKind::Remote, rootName, " sent a table of ranks that is not hora's (entry ", r,
           "): is another service at that address?");
  }
}
}  // namespace

Bootstrap::Bootstrap(const UniqueId& id, int rank, int nranks, bool hostRoot,
                     const Deadline& deadline, const std::atomic<bool>* abort)
    : magic_(id.magic), rank_(rank), nranks_(nranks), abort_(abort) {
  HORA_CHECK_ARG(nranks > 0, "nranks must be positive, got ", nranks);
  HORA_CHECK_ARG(rank >= 0 && rank < nranks, "rank ", rank, " is outside [0, ", nranks, ")");
  // The time this rank is given to join (HORA_TIMEOUT, which every rank and
  // so the root too is given).
  const auto allowed = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.at() - Deadline::Clock::now());
  joinDeadline_ = deadline;

  std::shared_future<void> rootDone;
  if (hostRoot && rank == 0) {
    Socket rootListener;
    try {
      rootListener = Socket::listen(id.root);
    } catch (const Error& e) {
      fail(ErrorKind::System, "rank 0 cannot host the rendezvous at ", id.root.toString(), ": ",
           e.what(), " (is the port in use, or the address not on this host?)");
    }
    rootDone = startRootServer(
        std::move(rootListener), id.magic,
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline.at() - Deadline::Clock::now()));
  }

  NetworkInterface interface = chooseInterface(&id.root);
  SocketAddress bindAddress = interface.address;
  bindAddress.setPort(0);
  Socket listener = Socket::listen(bindAddress);
  localAddress_ = listener.localAddress();
  interfaceName_ = interface.name;
  HORA_LOG(Info, "bootstrap: interface ", interface.name, " ", localAddress_.toString(),
           ", root ", id.root.toString());

  // Peers that connect before the ring is made wait in the backlog; the
  // gatekeeper later tells them from strangers.
  Gatekeeper ring(std::move(listener),
                  {id.magic, Purpose::RingHello, sizeof(Visit), "bootstrap listener", ""});

  Hello hello;
  hello.nranks = nranks;
  hello.self.rank = rank;
  hello.self.pid = static_cast<std::int32_t>(getpid());
  hello.self.hostHash = localHostHash();
  gethostname(hello.self.host, sizeof(hello.self.host) - 1);
  std::memcpy(&hello.self.listen, &localAddress_.storage, sizeof(localAddress_.storage));
  hello.self.listenLength = localAddress_.length;

  const std::string rootName = strCat("the bootstrap root at ", id.root.toString());
  RootReply reply;
  Socket root;
  bool rootReached = false;
  try {
    bool rootWasDown = false;
    root = Socket::connect(id.root, deadline, abort, rootName, /*listenerWasUp=*/false, &rootWasDown);
    rootReached = true;
    // The root answers by its own deadline at the latest: the table, or why
    // init failed (a rank that never came, named). A root that came up
    // after this rank started (NCCL_COMM_ID: rank 0 started later) has a
    // later deadline than this rank, but no later than `allowed` from now,
    // when this rank reached it. So this rank goes on until then, not only
    // until its own deadline, which would have it give up first and blame
    // rank 0 for a rank that never came; the rest of init too, which the
    // others run under their later deadlines. At most twice `allowed` in
    // all. A root that was up at once started before this rank: its
    // deadline is not later.
    if (const Deadline rootsLatest = Deadline::after(allowed); rootWasDown && deadline.at() < rootsLatest.at())
      joinDeadline_ = rootsLatest;
    if (joinDeadline_.at() != Deadline::never().at())  // 0: no limit
      hello.answerWithinMs = static_cast<std::int32_t>(std::clamp<std::int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(joinDeadline_.at() - Deadline::Clock::now()).count(),
          1, std::numeric_limits<std::int32_t>::max()));
    sendGreeting(root, id.magic, Purpose::RootHello, &hello, sizeof(hello), joinDeadline_, abort, rootName);
    // The table follows the reply at once: both within the grace.
    const Deadline answer = joinDeadline_.extendedBy(kRootReplyGrace);
    root.recvAll(&reply, sizeof(reply), answer, abort, rootName);
    reply.error[sizeof(reply.error) - 1] = '\0';
    if (reply.ok) {
      peers_.resize(nranks);
      root.recvAll(peers_.data(), peers_.size() * sizeof(PeerInfo), answer, abort, rootName);
      checkPeerTable(peers_, rootName);
    }
  } catch (const Error& error) {
    // With NCCL_COMM_ID rank 0 hosts the root: a root that never listened,
    // closed or did not answer is rank 0 gone, stopped or not started.
    if (error.kind() != ErrorKind::Remote) throw;
    if (rank == 0 || !rootHostedByRankZero()) {
      if (rootReached) throw;
      // The root of a ncclUniqueId listens from ncclGetUniqueId until the
      // communicator is made: an id used a second time finds it gone.
      throw Error(error.kind(),
                  strCat("rank ", rank, ": ", error.what(), ". The root listens in the process that called ",
                         "ncclGetUniqueId, until the communicator it was made for is ready: that process must ",
                         "be running, and a ncclUniqueId serves one initialisation only"));
    }
    throw Error(error.kind(),
                strCat("rank ", rank, ": rank 0 failed first: the rendezvous root it hosts (NCCL_COMM_ID) ",
                       "was not reached or did not answer: ", error.what()),
                0);
  }
  // The root in this process must finish answering the other ranks before
  // this rank returns (and perhaps exits).
  if (rootDone.valid()) rootDone.wait_for(kRootReplyGrace);
  if (!reply.ok)
    throw Error(static_cast<ErrorKind>(reply.kind),
                strCat("rank ", rank, ": communicator init failed: ", reply.error), reply.failedRank);

  control_ = std::move(ring);
}

void Bootstrap::connectRing(const Deadline& deadline) {
  if (nranks_ == 1) return;
  const int rank = rank_, nranks = nranks_;
  const auto* abort = abort_;
  // Ring: connect to the next rank, accept the previous one. Each side
  // proves it holds the id and says who it is, so a stray connection is
  // recognised. The next rank's listener was up before the root answered,
  // so a refusal means that rank has gone.
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  try {
    next_ = Socket::connect(peers_[next].listenAddress(), deadline, abort,
                            strCat(describe(next), " at ", peers_[next].listenAddress().toString()),
                            /*listenerWasUp=*/true);
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::Remote) throw;
    throw Error(error.kind(), error.what(), next);  // its listener has closed: it is gone
  }
  const Visit me{rank, VisitKind::Ring};
  try {
    sendGreeting(next_, magic_, Purpose::RingHello, &me, sizeof(me), deadline, abort, describe(next));
  } catch (const Error& error) {
    throw Error(error.kind(), error.what(), next);
  }
  const std::string waiting = strCat("waiting for ", describe(prev), " to connect");
  // The previous rank may die before it connects: look now and then.
  Deadline nextLook = Deadline::after(kLookForDeadPeers);
  auto stillAlive = [&] {
    if (!nextLook.expired()) return;
    nextLook = Deadline::after(kLookForDeadPeers);
    if (peerGone(prev))
      throw Error(ErrorKind::Remote,
                  strCat("rank ", rank, ": ", describe(prev), " failed first: its process is gone (it exited or "
                         "was killed during init)"),
                  prev);
  };
  for (;;) {
    Gatekeeper::Guest guest = control_.admit(deadline, abort, waiting, stillAlive);
    Visit visit;
    std::memcpy(&visit, guest.body.data(), sizeof(visit));
    if (visit.kind == VisitKind::Notice && visit.rank >= 0 && visit.rank < nranks)
      throw readNotice(guest.socket, visit.rank);
    if (isShrinkVisit(visit.kind)) {
      shrinkRequests_.push_back(std::move(guest));
      continue;
    }
    if (visit.kind != VisitKind::Ring) continue;  // a probe
    if (visit.rank == prev) {
      prev_ = std::move(guest.socket);
      break;
    }
    // It holds the secret, so it is one of ours, but not the neighbour we
    // expect: say so, yet a late duplicate must not break the ring.
    HORA_LOG(Warn, "bootstrap: ignoring a connection from ", guest.from.toString(),
             " that claims to be rank ", visit.rank, " (expected ", describe(prev), ")");
  }
  next_.setNoDelay();
  prev_.setNoDelay();
}

std::string Bootstrap::describe(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(peers_.size())) return strCat("rank ", rank);
  return strCat("rank ", rank, " (host ", peers_[rank].host, ", pid ", peers_[rank].pid, ")");
}

void Bootstrap::allGather(void* data, std::size_t bytesPerRank, const Deadline& deadline) {
  auto* blocks = static_cast<char*>(data);
  int next = (rank_ + 1) % nranks_, prev = (rank_ + nranks_ - 1) % nranks_;
  // Step s: pass on the block that arrived in step s-1 (our own at s = 0).
  for (int step = 0; step < nranks_ - 1; ++step) {
    int sendBlock = (rank_ - step + nranks_) % nranks_;
    int recvBlock = (rank_ - step - 1 + 2 * nranks_) % nranks_;
    exchange(next_, blocks + sendBlock * bytesPerRank, bytesPerRank, describe(next), prev_,
             blocks + recvBlock * bytesPerRank, bytesPerRank, describe(prev), deadline, abort_);
  }
}

void Bootstrap::barrier(const Deadline& deadline) {
  std::vector<char> bytes(nranks_, 0);
  allGather(bytes.data(), 1, deadline);
}

void Bootstrap::shutdown() {
  next_.shutdown();
  prev_.shutdown();
}

}  // namespace hora::bootstrap
