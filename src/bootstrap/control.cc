// The control plane of bootstrap.h: notices, probes and shrink requests
// through each rank's bootstrap listener (control.h).
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "base/process_state.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/greeting.h"

namespace hora::bootstrap {

namespace {
// A notice is a rank's last word: it must not hold that rank up.
constexpr auto kAnnounceBudget = std::chrono::milliseconds(1000);
constexpr auto kAnnouncePerPeer = std::chrono::milliseconds(200);
// A probe reaches a live listener at once (it is up, its backlog takes the
// connection even while its rank is busy); a dead one refuses at once.
constexpr auto kProbePatience = std::chrono::milliseconds(300);
}  // namespace

std::string ShrinkRequest::excludedText() const {
  // Counts come from another rank: bounded before they index anything.
  const int shown = std::clamp(excludedCount, 0, kShownRanks);
  std::string text = "[";
  for (int k = 0; k < shown; ++k) text += strCat(k == 0 ? "" : ", ", firstExcluded[k]);
  if (excludedCount > shown) text += strCat(", and ", excludedCount - shown, " more");
  return text + "]";
}

Socket Bootstrap::visit(int rank, VisitKind kind, const Deadline& deadline) {
  const std::string name = describe(rank);
  Socket socket = Socket::connect(peers_[rank].listenAddress(), deadline, nullptr, name, /*listenerWasUp=*/true);
  const Visit visit{rank_, kind};
  sendGreeting(socket, magic_, Purpose::RingHello, &visit, sizeof(visit), deadline, nullptr, name);
  return socket;
}

std::vector<char> Bootstrap::noticeMessage(const Error& error) {
  std::string text = error.what();
  if (text.size() > kMaxNoticeBytes) text.resize(kMaxNoticeBytes);
  const NoticeHeader header{static_cast<std::int32_t>(error.kind()), error.failedRank(),
                            static_cast<std::uint32_t>(text.size())};
  std::vector<char> message(sizeof(header) + text.size());
  std::memcpy(message.data(), &header, sizeof(header));
  std::memcpy(message.data() + sizeof(header), text.data(), text.size());
  return message;
}

void Bootstrap::tell(int peer, const std::vector<char>& message) {
  try {
    const Deadline deadline = Deadline::after(kAnnouncePerPeer);
    Socket socket = visit(peer, VisitKind::Notice, deadline);
    socket.sendAll(message.data(), message.size(), deadline, nullptr, describe(peer));
  } catch (const Error& failure) {
    HORA_LOG(Info, "rank ", rank_, ": could not tell ", describe(peer), " why the communicator stopped: ",
             failure.what());
  }
}

void Bootstrap::announce(const Error& error) {
  if (peers_.empty()) return;  // before the root answered: nobody to tell
  const std::vector<char> message = noticeMessage(error);
  const Deadline all = Deadline::after(kAnnounceBudget);
  const int blamed = error.failedRank();
  for (int peer = 0; peer < nranks_; ++peer)
    if (peer != rank_ && peer != blamed && !all.expired()) tell(peer, message);
  // The rank blamed, last: it is gone or knows, unless it was only late (a
  // rank that waited for it gave up first). Told, such a rank learns why
  // its peers stopped, instead of blaming the first of them to close. Only
  // one of this host whose process still runs (not stopped by a signal):
  // elsewhere its silence may be the network's, and the visit could use up
  // the budget.
  if (!all.expired() && peerRunning(blamed)) tell(blamed, message);
}

void Bootstrap::passOn(const PeerNotice& notice) {
  if (peers_.empty() || nranks_ < 3) return;  // with 2 ranks the other is the teller
  // The teller tells every rank, but a rank it told may close before the
  // teller's visit reaches this rank's neighbours, which then see this
  // rank close first, find its process gone, and would blame it. So this
  // rank tells them too, before it closes.
  const std::vector<char> message = noticeMessage(notice);
  for (int neighbour : {(rank_ + 1) % nranks_, (rank_ + nranks_ - 1) % nranks_})
    if (neighbour != notice.teller() && neighbour != notice.failedRank()) tell(neighbour, message);
}

PeerNotice Bootstrap::readNotice(Socket& socket, int from) {
  const Deadline deadline = Deadline::after(kGreetingPatience);
  const std::string name = describe(from);
  NoticeHeader header{};
  socket.recvAll(&header, sizeof(header), deadline, nullptr, name);
  std::string text(std::min(header.textBytes, kMaxNoticeBytes), '\0');
  socket.recvAll(text.data(), text.size(), deadline, nullptr, name);
  const auto kind = static_cast<ErrorKind>(header.errorKind);
  // A misuse stays a misuse on every rank, and blames no rank (no rank is
  // to be shrunk past: every rank reports failedRank -1 alike); anything
  // else is, to the rank told, a peer's failure.
  const bool misuse = kind == ErrorKind::InvalidUsage;
  return PeerNotice(misuse ? kind : ErrorKind::Remote,
                    strCat("rank ", rank_, ": the communicator was stopped by rank ", from, ", which found: ", text),
                    misuse || header.failedRank >= 0 ? header.failedRank : from, from);
}

std::optional<Gatekeeper::Guest> Bootstrap::heldOrArrived(std::deque<Gatekeeper::Guest>& held) {
  if (held.empty()) return control_.tryAdmit();
  Gatekeeper::Guest guest = std::move(held.front());
  held.pop_front();
  return guest;
}

std::optional<PeerNotice> Bootstrap::noticeWithin(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(controlMutex_);
  const Deadline deadline = Deadline::after(grace);
  for (;;) {
    std::optional<Gatekeeper::Guest> guest = heldOrArrived(heldNotices_);
    if (!guest) {
      if (deadline.expired()) return std::nullopt;
      try {
        guest = control_.admit(deadline, nullptr, "waiting for a peer's notice");
      } catch (const Error&) {
        return std::nullopt;  // none came
      }
    }
    Visit visit;
    std::memcpy(&visit, guest->body.data(), sizeof(visit));
    if (visit.rank < 0 || visit.rank >= nranks_ || visit.rank == rank_) continue;
    if (isShrinkVisit(visit.kind)) {
      shrinkRequests_.push_back(std::move(*guest));
      continue;
    }
    if (visit.kind != VisitKind::Notice) continue;  // a probe or a late ring hello
    try {
      return readNotice(guest->socket, visit.rank);
    } catch (const Error&) {
      continue;  // the notice was cut short
    }
  }
}

bool Bootstrap::peerGone(int rank) {
  if (rank < 0 || rank >= static_cast<int>(peers_.size()) || rank == rank_) return false;
  // A pid means something only on this host, in this pid namespace: what an
  // equal host hash says (localHostHash).
  if (peers_[rank].hostHash == peers_[rank_].hostHash) return processGone(peers_[rank].pid);
  try {
    visit(rank, VisitKind::Probe, Deadline::after(kProbePatience));
    return false;
  } catch (const Error& error) {
    // Only a refusal is sure; a probe that timed out says nothing.
    return std::string(error.what()).find("refused") != std::string::npos;
  }
}

bool Bootstrap::peerStopped(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(peers_.size()) || rank == rank_) return false;
  return peers_[rank].hostHash == peers_[rank_].hostHash && processStopped(peers_[rank].pid);
}

bool Bootstrap::peerRunning(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(peers_.size()) || rank == rank_) return false;
  return peers_[rank].hostHash == peers_[rank_].hostHash && !processGone(peers_[rank].pid) &&
         !processStopped(peers_[rank].pid);
}

UniqueId Bootstrap::askShrinkLeader(const std::vector<int>& members, const ShrinkRequest& request,
                                    const Deadline& deadline, const std::atomic<bool>* abort) {
  const int leader = members.front();
  const std::string name = describe(leader);
  Socket socket = Socket::connect(peers_[leader].listenAddress(), deadline, abort, name, /*listenerWasUp=*/true);
  const Visit visit{rank_, VisitKind::ShrinkRequest};
  // The greeting announces only the Visit; the request follows it.
  sendGreeting(socket, magic_, Purpose::RingHello, &visit, sizeof(visit), deadline, abort, name);
  socket.sendAll(&request, sizeof(request), deadline, abort, name);
  // Until the leader answers, a request that reaches this rank comes from a
  // rank whose list makes this one the first remaining rank, which by this
  // rank's own list it is not: answered at once, its sender fails now
  // instead of at the deadline.
  const auto notLeader = [&](int) {
    return strCat(describe(rank_), " is not the first remaining rank by its own excludeRanksList (rank ", leader,
                  " is): every remaining rank must pass the same excludeRanksList");
  };
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(controlMutex_);
      // A rank this list keeps that led a shrink without this rank will not
      // join the one asked for here.
      refuseShrinkRequests(notLeader,
                           [&](int rank) { return std::binary_search(members.begin(), members.end(), rank); });
    }
    pollfd entry{socket.fd(), POLLIN, 0};
    const int ready = ::poll(&entry, 1, deadline.pollTimeoutMs(Socket::kPollSliceMs));
    if (ready > 0 || deadline.expired() || (abort != nullptr && abort->load())) break;
  }
  ShrinkReply reply;
  socket.recvAll(&reply, sizeof(reply), deadline, abort, strCat(name, ", the first rank of the shrunk communicator"));
  reply.error[sizeof(reply.error) - 1] = '\0';
  if (!reply.ok) fail(ErrorKind::InvalidUsage, "rank ", rank_, ": ", reply.error);
  return decode(reply.id);
}

void Bootstrap::refuseShrinkRequests(const std::function<std::string(int from)>& why,
                                     const std::function<bool(int rank)>& awaited) {
  for (;;) {
    std::optional<Gatekeeper::Guest> guest = heldOrArrived(shrinkRequests_);
    if (!guest) return;
    Visit visit;
    std::memcpy(&visit, guest->body.data(), sizeof(visit));
    if (visit.rank < 0 || visit.rank >= nranks_) continue;  // not one of ours
    if (visit.kind == VisitKind::ShrinkRequest) {
      refuseShrinkRequest(guest->socket, visit.rank, why(visit.rank));
    } else if (visit.kind == VisitKind::ShrinkLeftOut && awaited(visit.rank)) {
      throw leftOutError(visit.rank);
    } else if (visit.kind == VisitKind::Notice) {
      heldNotices_.push_back(std::move(*guest));  // for noticeWithin
    }
  }
}

Error Bootstrap::leftOutError(int leader) const {
  return Error(ErrorKind::InvalidUsage,
               strCat("rank ", rank_, ": ", describe(leader), " has shrunk the communicator without this rank (its "
                      "excludeRanksList names rank ", rank_, ", and the ranks it kept have joined it): every "
                      "remaining rank must pass the same excludeRanksList"));
}

void Bootstrap::tellLeftOut(const std::vector<int>& excluded) {
  // A rank of this host is visited only if its process still runs. Whether
  // one of another host runs cannot be seen from here, so each is visited,
  // all at once, each visit bounded: a shrink past a whole dead host costs
  // at most one visit's bound, however many ranks that host had.
  const auto tell = [this](int rank) {
    try {
      visit(rank, VisitKind::ShrinkLeftOut, Deadline::after(kAnnouncePerPeer));
    } catch (const Error& failure) {
      HORA_LOG(Info, "rank ", rank_, ": could not tell ", describe(rank), " that the shrink left it out: ",
               failure.what());
    }
  };
  std::vector<std::thread> distant;
  for (int rank : excluded) {
    if (rank < 0 || rank >= static_cast<int>(peers_.size()) || rank == rank_) continue;
    if (peers_[rank].hostHash != peers_[rank_].hostHash) distant.emplace_back(tell, rank);
    else if (peerRunning(rank)) tell(rank);
  }
  for (std::thread& visitor : distant) visitor.join();
}

void Bootstrap::refuseShrinkRequest(Socket& socket, int from, const std::string& why) {
  const std::string name = describe(from);
  HORA_LOG(Warn, "rank ", rank_, ": refusing a shrink request from ", name, ": ", why);
  try {
    const Deadline deadline = Deadline::after(kGreetingPatience);
    ShrinkRequest theirs;
    socket.recvAll(&theirs, sizeof(theirs), deadline, nullptr, name);
    ShrinkReply reply;
    std::snprintf(reply.error, sizeof(reply.error), "%s", why.c_str());
    socket.sendAll(&reply, sizeof(reply), deadline, nullptr, name);
  } catch (const Error& error) {
    HORA_LOG(Info, "rank ", rank_, ": could not answer ", name, "'s shrink request: ", error.what());
  }
}

void Bootstrap::serveShrinkMembers(const std::vector<int>& members, const ShrinkRequest& request,
                                   const UniqueId& id, const Deadline& deadline, const std::atomic<bool>* abort) {
  std::lock_guard<std::mutex> lock(controlMutex_);
  const auto leftOut = [&](int asker) {
    return strCat("rank ", asker, " asked ", describe(rank_), " for the shrunk communicator, but rank ", rank_,
                  "'s excludeRanksList leaves rank ", asker, " out: every remaining rank must pass the same "
                  "excludeRanksList");
  };
  std::vector<bool> isMember(nranks_, false);
  for (int m : members) isMember[m] = m != rank_;
  // Every member's request first, then one answer for all: members must not
  // go on to a communicator that one of them will not join.
  std::vector<Socket> asked(nranks_);
  const auto answer = [&](int member, const ShrinkReply& reply) {
    try {
      asked[member].sendAll(&reply, sizeof(reply), deadline, abort, describe(member));
    } catch (const Error& error) {
      HORA_LOG(Warn, "rank ", rank_, ": could not answer ", describe(member), "'s shrink request: ", error.what());
    }
  };
  std::size_t left = members.size() - 1;
  std::string disagreement;
  while (left > 0) {
    Gatekeeper::Guest guest;
    if (std::optional<Gatekeeper::Guest> ready = heldOrArrived(shrinkRequests_)) {
      guest = std::move(*ready);
    } else {
      std::string missing;
      for (int m : members)
        if (isMember[m] && !asked[m].valid()) missing += strCat(missing.empty() ? "" : ", ", m);
      guest = control_.admit(deadline, abort,
                             strCat("waiting for rank(s) ", missing,
                                    " to ask for the shrunk communicator (a rank whose excludeRanksList differs "
                                    "may have asked another rank, or not be running)"));
    }
    Visit visit;
    std::memcpy(&visit, guest.body.data(), sizeof(visit));
    if (visit.rank < 0 || visit.rank >= nranks_) continue;
    if (visit.kind == VisitKind::ShrinkLeftOut && isMember[visit.rank]) {
      // A rank this list keeps led a shrink that leaves this rank out: the
      // ranks it kept will not ask here. Whoever did ask is told, and this
      // rank fails now.
      const Error error = leftOutError(visit.rank);
      ShrinkReply refusal;
      std::snprintf(refusal.error, sizeof(refusal.error), "%s", error.what());
      for (int m : members)
        if (isMember[m] && asked[m].valid()) answer(m, refusal);
      throw error;
    }
    if (visit.kind != VisitKind::ShrinkRequest) continue;  // stale notices, probes
    if (!isMember[visit.rank] || asked[visit.rank].valid()) {
      // A rank this list leaves out (or one asking twice): told so at once.
      refuseShrinkRequest(guest.socket, visit.rank, leftOut(visit.rank));
      continue;
    }
    ShrinkRequest theirs;
    try {
      guest.socket.recvAll(&theirs, sizeof(theirs), Deadline::after(kGreetingPatience), nullptr, describe(visit.rank));
    } catch (const Error&) {
      continue;  // it will ask again or time out
    }
    if (std::memcmp(&theirs, &request, sizeof(request)) != 0 && disagreement.empty())
      disagreement = strCat("rank ", visit.rank, " excludes ranks ", theirs.excludedText(), " and rank ", rank_,
                            " excludes ranks ", request.excludedText(),
                            ": every remaining rank must pass the same excludeRanksList");
    asked[visit.rank] = std::move(guest.socket);
    --left;
  }
  ShrinkReply reply;
  if (disagreement.empty()) {
    reply.ok = 1;
    encode(id, reply.id);
  } else {
    std::snprintf(reply.error, sizeof(reply.error), "%s", disagreement.c_str());
  }
  for (int m : members)
    if (isMember[m]) answer(m, reply);
  // Ranks this list leaves out that asked too (their request may have
  // waited behind the members'): told now, not by a reset when this
  // communicator closes. Every member has joined: no rank is awaited.
  refuseShrinkRequests(leftOut, [](int) { return false; });
  if (!disagreement.empty()) fail(ErrorKind::InvalidUsage, "rank ", rank_, ": ", disagreement);
}

}  // namespace hora::bootstrap
