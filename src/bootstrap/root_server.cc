#include "bootstrap/root_server.h"

#include <poll.h>

#include <cstring>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap/gatekeeper.h"

namespace hora::bootstrap {

SocketAddress PeerInfo::listenAddress() const {
  SocketAddress address;
  std::memcpy(&address.storage, &listen, sizeof(listen));
  address.length = listenLength;
  return address;
}

namespace {

struct Arrival {
  Socket socket;
  Hello hello;
};

void replyError(Socket& socket, ErrorKind kind, int failedRank, const std::string& text,
                const Deadline& deadline) {
  RootReply reply;
  reply.kind = static_cast<std::int32_t>(kind);
  reply.failedRank = failedRank;
  std::snprintf(reply.error, sizeof(reply.error), "%s", text.c_str());
  try {
    socket.sendAll(&reply, sizeof(reply), deadline, nullptr, "a joining rank");
  } catch (const Error&) {
    // That rank is gone; nothing more to tell it.
  }
}

// How long a root that failed init keeps answering ranks that connect.
constexpr std::chrono::milliseconds kStragglerGrace{300};

std::string missingRanks(const std::vector<Arrival>& arrived, int nranks) {
  std::vector<bool> present(nranks, false);
  for (const auto& arrival : arrived) present[arrival.hello.self.rank] = true;
  std::string list;
  int shown = 0, missing = 0;
  for (int r = 0; r < nranks; ++r) {
    if (present[r]) continue;
    ++missing;
    if (shown++ < 16) list += (list.empty() ? "" : ", ") + std::to_string(r);
  }
  if (missing > shown) list += ", ...";
  return strCat(missing, " rank(s) never arrived: ", list);
}

// Returns an error text, or empty if the hello fits the rendezvous so far.
// Only ranks that hold the secret get this far, so an inconsistency here is
// a mistake in the job (it fails init on every rank), not a stranger.
std::string validate(const Hello& hello, int nranks, const std::vector<Arrival>& arrived) {
  if (hello.nranks != nranks)
    return strCat("rank ", hello.self.rank, " (host ", hello.self.host, ") says the communicator has ",
                  hello.nranks, " ranks, rank ", arrived.front().hello.self.rank, " says ", nranks);
  if (hello.self.rank < 0 || hello.self.rank >= nranks)
    return strCat("a rank joined with rank ", hello.self.rank, " outside [0, ", nranks, ")");
  for (const auto& arrival : arrived)
    if (arrival.hello.self.rank == hello.self.rank)
      return strCat("rank ", hello.self.rank, " joined twice (from ", arrival.hello.self.host,
                    " pid ", arrival.hello.self.pid, " and ", hello.self.host, " pid ",
                    hello.self.pid, ")");
  const PeerInfo& self = hello.self;
  if (self.listenLength > sizeof(self.listen) ||
      (self.listen.ss_family != AF_INET && self.listen.ss_family != AF_INET6))
    return strCat("rank ", self.rank, " sent an unusable listener address (family ",
                  self.listen.ss_family, ", length ", self.listenLength, ")");
  return {};
}

// What a hora rank holding another communicator's id is told.
std::string refusalForOtherJobs() {
  RootReply reply;
  reply.kind = static_cast<std::int32_t>(ErrorKind::InvalidUsage);
  std::snprintf(reply.error, sizeof(reply.error), "%s",
                "this root belongs to another communicator (unique id magic does not match)");
  return std::string(reinterpret_cast<const char*>(&reply), sizeof(reply));
}

void serve(Socket listener, std::uint64_t magic, std::chrono::milliseconds timeout) {
  const Deadline deadline = Deadline::after(timeout);
  // Until when ranks are waited for: the root's own deadline, or a rank's
  // earlier one (Hello::answerWithinMs). The answers then go out under the
  // root's own deadline.
  Deadline arrivalsBy = deadline;
  Gatekeeper gate(std::move(listener), {magic, Purpose::RootHello, sizeof(Hello),
                                        "bootstrap root", refusalForOtherJobs()});
  std::vector<Arrival> arrived;
  int nranks = -1;
  std::string error;
  ErrorKind errorKind = ErrorKind::InvalidUsage;  // inconsistent joins
  int failedRank = -1;
  // A rank that joined and then died (its connection closed) will never
  // take part: the others hear it now, not at the deadline.
  auto arrivalsAlive = [&] {
    for (const Arrival& arrival : arrived) {
      pollfd entry{arrival.socket.fd(), POLLRDHUP, 0};
      if (::poll(&entry, 1, 0) > 0 && (entry.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
        const PeerInfo& who = arrival.hello.self;
        throw Error(ErrorKind::Remote,
                    strCat("rank ", who.rank, " (host ", who.host, ", pid ", who.pid,
                           ") failed first: it left during init, after joining the rendezvous (its process exited "
                           "or was killed)"),
                    who.rank);
      }
    }
  };
  try {
    while (nranks < 0 || static_cast<int>(arrived.size()) < nranks) {
      Gatekeeper::Guest guest = gate.admit(arrivalsBy, nullptr, "waiting for ranks to join", arrivalsAlive);
      Arrival arrival;
      arrival.socket = std::move(guest.socket);
      std::memcpy(&arrival.hello, guest.body.data(), sizeof(Hello));
      arrival.hello.self.host[sizeof(arrival.hello.self.host) - 1] = '\0';  // for messages
      if (arrival.hello.answerWithinMs > 0) {
        const Deadline ranksDeadline = Deadline::after(std::chrono::milliseconds(arrival.hello.answerWithinMs));
        if (ranksDeadline.at() < arrivalsBy.at()) arrivalsBy = ranksDeadline;
      }
      if (nranks < 0) nranks = arrival.hello.nranks;
      if (nranks <= 0) {
        error = strCat("rank ", arrival.hello.self.rank, " joined with nranks ", nranks);
        arrived.push_back(std::move(arrival));
        break;
      }
      error = validate(arrival.hello, nranks, arrived);
      arrived.push_back(std::move(arrival));
      if (!error.empty()) break;
    }
  } catch (const Error& e) {
    errorKind = ErrorKind::Remote;
    failedRank = e.failedRank();
    error = failedRank >= 0 ? std::string(e.what())
            : nranks > 0    ? strCat("init timed out: ", missingRanks(arrived, nranks), " (", e.what(), ")")
                            : strCat("init failed at the root: ", e.what());
  }

  if (!error.empty() && arrived.empty()) {
    // An id nobody used (ncclCommInitRankScalable meets at its first id
    // only, and a program may make an id it never passes on): not a failure.
    HORA_LOG(Info, "bootstrap root: no rank came; closing (", error, ")");
    return;
  }
  if (!error.empty()) {
    HORA_LOG(Warn, "bootstrap root: ", error);
    Deadline replyDeadline = Deadline::after(std::chrono::seconds(2));
    for (auto& arrival : arrived) replyError(arrival.socket, errorKind, failedRank, error, replyDeadline);
    // Ranks that are connecting right now (in the backlog, or still
    // greeting) hear the same, rather than a reset from a root that is gone.
    const Deadline stragglers = Deadline::after(kStragglerGrace);
    while (nranks > 0 && static_cast<int>(arrived.size()) < nranks) {
      try {
        Gatekeeper::Guest guest = gate.admit(stragglers, nullptr, "answering late ranks");
        replyError(guest.socket, errorKind, failedRank, error, replyDeadline);
        arrived.push_back({std::move(guest.socket), Hello{}});
      } catch (const Error&) {
        break;  // no more came
      }
    }
    return;
  }
  std::vector<PeerInfo> table(nranks);
  for (const auto& arrival : arrived) table[arrival.hello.self.rank] = arrival.hello.self;
  RootReply ok;
  ok.ok = 1;
  for (auto& arrival : arrived) {
    try {
      arrival.socket.sendAll(&ok, sizeof(ok), deadline, nullptr, "a joining rank");
      arrival.socket.sendAll(table.data(), table.size() * sizeof(PeerInfo), deadline, nullptr,
                             "a joining rank");
    } catch (const Error& e) {
      HORA_LOG(Warn, "bootstrap root: could not answer rank ", arrival.hello.self.rank, ": ",
               e.what());
    }
  }
}

}  // namespace

std::shared_future<void> startRootServer(Socket listener, std::uint64_t magic,
                                         std::chrono::milliseconds timeout) {
  auto answered = std::make_shared<std::promise<void>>();
  std::shared_future<void> done = answered->get_future().share();
  std::thread([socket = std::move(listener), magic, timeout, answered]() mutable {
    try {
      serve(std::move(socket), magic, timeout);
    } catch (const std::exception& e) {
      HORA_LOG(Warn, "bootstrap root stopped: ", e.what());
    }
    answered->set_value();
  }).detach();
  return done;
}

}  // namespace hora::bootstrap
